import CSystemd
import Foundation
import Platform
import Synchronization

/// Which bus to connect to. The addresses come from the environment as every D-Bus
/// program reads them (`DBUS_SYSTEM_BUS_ADDRESS`, `DBUS_SESSION_BUS_ADDRESS`), so tests
/// run services on private buses.
public enum DBusBus: Sendable, Equatable, CustomStringConvertible {
    case system
    case session
    /// A bus at this address (`unix:path=…`).
    case address(String)

    public var description: String {
        switch self {
        case .system: "system bus"
        case .session: "session bus"
        case .address(let address): "bus at \(address)"
        }
    }
}

/// A method call to make.
public struct DBusMethodCall: Sendable, Equatable {
    public var destination: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]

    public init(destination: String, path: String, interface: String, member: String, arguments: [DBusValue] = []) {
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// A signal received, or a method call received on an exported object.
public struct DBusMessage: Sendable, Equatable {
    public var sender: String?
    public var path: String?
    public var interface: String?
    public var member: String?
    public var arguments: [DBusValue]
}

/// What an exported object answers to a method call.
public enum DBusReply: Sendable, Equatable {
    case values([DBusValue])
    case error(name: String, message: String)
    /// Not this object's method: sd-bus answers `UnknownMethod`.
    case unknown
}

/// A signal subscription or an exported object; `cancel()` (or dropping it) ends it.
public final class DBusRegistration: Sendable {
    private let end: Mutex<(@Sendable () -> Void)?>

    init(_ end: @escaping @Sendable () -> Void) { self.end = Mutex(end) }
    deinit { cancel() }

    public func cancel() {
        end.withLock { $0.take() }?()
    }
}

/// One connection to a bus, over sd-bus, with a thread of its own (`ariata-dbus`) that
/// owns it: sd-bus objects are not thread-safe, so every use of the bus runs there, and
/// other threads hand it work. The thread sleeps in poll(2) on the bus socket with sd-bus's
/// own time-out, which is none while no call is pending: an idle connection never wakes
/// the process (docs/dbus.md).
///
/// Calls are made asynchronously on the bus thread even when the caller blocks for the
/// answer, so the thread keeps answering calls to the objects exported meanwhile (GeoClue
/// reads its agent's properties before it answers `AddAgent`).
///
/// A lost connection is not made again here: every call then fails with `.notConnected`
/// and `onLost` runs once; `DBusLink`, through which clients use connections, makes a new
/// one on its backoff.
public final class DBusConnection: Sendable {
    public let bus: DBusBus
    private let thread: Mutex<NamedThread?>
    private let jobs = Mutex<[@Sendable (Handle) -> Void]>([])
    private let jobSignal: Int32
    private let lostHandlers = Mutex<[@Sendable (DBusError) -> Void]>([])
    private let state = Mutex(State())

    private struct State {
        var lost: DBusError?
        var threadID: pthread_t?
        var uniqueName: String?
    }

    /// The sd-bus object, touched only on the bus thread.
    final class Handle: @unchecked Sendable {
        let bus: OpaquePointer
        init(_ bus: OpaquePointer) { self.bus = bus }
    }

    /// Connects (on the caller's thread) and starts the bus thread.
    public init(_ bus: DBusBus, threadName: String = "ariata-dbus") throws(DBusError) {
        self.bus = bus
        var raw: OpaquePointer?
        let code: Int32
        switch bus {
        case .system: code = sd_bus_open_system(&raw)
        case .session: code = sd_bus_open_user(&raw)
        case .address(let address): code = Self.open(address: address, into: &raw)
        }
        guard code >= 0, let raw else { throw DBusError.cannotConnect(bus: bus.description, code: code) }
        var name: UnsafePointer<CChar>?
        if sd_bus_get_unique_name(raw, &name) >= 0, let name {
            state.withLock { $0.uniqueName = String(cString: name) }
        }
        let eventFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard eventFD >= 0 else {
            sd_bus_flush_close_unref(raw)
            throw DBusError.system(code: -errno, while: "making the bus thread's wake-up descriptor")
        }
        jobSignal = eventFD
        thread = Mutex(nil)
        let handle = Handle(raw)
        do {
            let started = try NamedThread(name: threadName) { [weak self] waker in
                self?.run(handle, waker: waker)
                sd_bus_flush_close_unref(handle.bus)
            }
            thread.withLock { $0 = started }
        } catch {
            sd_bus_flush_close_unref(raw)
            Glibc.close(eventFD)
            throw DBusError.system(code: -EAGAIN, while: "starting the bus thread")
        }
    }

    deinit {
        close()
        Glibc.close(jobSignal)
    }

    /// This connection's unique name on the bus (`:1.42`).
    public var uniqueName: String? { state.withLock { $0.uniqueName } }

    /// nil while connected; why the connection ended, once it has.
    public var lostReason: DBusError? { state.withLock { $0.lost } }

    /// Runs once when the connection is lost (at once when it already is).
    public func onLost(_ handler: @escaping @Sendable (DBusError) -> Void) {
        let lost = state.withLock { $0.lost }
        if let lost { return handler(lost) }
        lostHandlers.withLock { $0.append(handler) }
    }

    /// Ends the connection: the bus thread flushes what is queued and closes it.
    public func close() {
        guard let thread = thread.withLock({ $0.take() }) else { return }
        thread.stop(timeout: 5)
    }

    // MARK: calls

    /// Calls a method and waits for its answer (at most `timeout` seconds). Not on the
    /// bus thread itself, whose work this would block: use `call(_:timeout:reply:)` there.
    public func call(_ call: DBusMethodCall, timeout: TimeInterval = 25) throws(DBusError) -> [DBusValue] {
        precondition(!isBusThread, "a blocking D-Bus call on the bus thread would wait for itself")
        let answer = Mutex<Result<[DBusValue], DBusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        self.call(call, timeout: timeout) { result in
            answer.withLock { $0 = result }
            done.signal()
        }
        // The bus's own time-out answers first; this one only guards a thread that died.
        guard done.wait(timeout: .now() + timeout + 5) == .success, let result = answer.withLock({ $0 }) else {
            throw DBusError.notConnected
        }
        return try result.get()
    }

    /// Calls a method; `reply` runs on the bus thread with the answer.
    public func call(_ call: DBusMethodCall, timeout: TimeInterval = 25,
                     reply: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void) {
        perform(orFail: { reply(.failure($0)) }) { handle in
            do throws(DBusError) {
                let message = try Self.newCall(call, on: handle.bus)
                defer { sd_bus_message_unref(message) }
                let box = Unmanaged.passRetained(ReplyBox(reply))
                var slot: OpaquePointer?
                let code = sd_bus_call_async(handle.bus, &slot, message, { message, userdata, _ in
                    guard let userdata else { return 0 }
                    let box = Unmanaged<ReplyBox>.fromOpaque(userdata).takeUnretainedValue()
                    box.deliver(message.map(DBusConnection.result(of:)) ?? .failure(.notConnected))
                    return 1
                }, box.toOpaque(), UInt64(max(0, timeout) * 1_000_000))
                guard code >= 0, let slot else {
                    box.release()
                    throw DBusError.system(code: code, while: "sending \(call.interface).\(call.member)")
                }
                // The bus owns the slot until the answer (or the time-out) came; the box
                // goes with it.
                Self.releaseOnDestroy(slot, box.toOpaque())
                sd_bus_slot_set_floating(slot, 1)
                sd_bus_slot_unref(slot)
            } catch {
                reply(.failure(error))
            }
        }
    }

    // MARK: signals and objects

    /// Calls `handler` on the bus thread for every signal matching `rule`.
    public func subscribe(_ rule: DBusMatchRule, handler: @escaping @Sendable (DBusMessage) -> Void) throws(DBusError) -> DBusRegistration {
        try register("subscribing to \(rule.text)") { handle, userdata, slot in
            rule.text.withCString { sd_bus_add_match(handle.bus, &slot, $0, Self.messageCallback, userdata) }
        } dispatch: { message in
            handler(message)
            return .unknown
        }
    }

    /// Answers method calls to `path` with `handler` (on the bus thread; keep it short).
    public func export(path: String, handler: @escaping @Sendable (DBusMessage) -> DBusReply) throws(DBusError) -> DBusRegistration {
        try register("exporting \(path)") { handle, userdata, slot in
            path.withCString { sd_bus_add_object(handle.bus, &slot, $0, Self.messageCallback, userdata) }
        } dispatch: { message in
            handler(message)
        }
    }

    /// Runs `body` on the bus thread (the way to chain calls from a reply).
    public func perform(_ body: @escaping @Sendable () -> Void) {
        perform(orFail: { _ in }) { _ in body() }
    }

    // MARK: the bus thread

    private var isBusThread: Bool {
        state.withLock { s in s.threadID.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    private func perform(orFail fail: @escaping @Sendable (DBusError) -> Void, _ job: @escaping @Sendable (Handle) -> Void) {
        if let lost = state.withLock({ $0.lost }) { return fail(lost) }
        guard thread.withLock({ $0 != nil }) else { return fail(.notConnected) }
        jobs.withLock { $0.append(job) }
        var one: UInt64 = 1
        _ = write(jobSignal, &one, 8)
    }

    private func register(_ what: String,
                          add: @escaping @Sendable (Handle, UnsafeMutableRawPointer, inout OpaquePointer?) -> Int32,
                          dispatch: @escaping @Sendable (DBusMessage) -> DBusReply) throws(DBusError) -> DBusRegistration {
        let slotBox = Mutex<SlotBox?>(nil)
        let outcome = Mutex<DBusError?>(nil)
        let done = DispatchSemaphore(value: 0)
        let register: @Sendable (Handle) -> Void = { handle in
            defer { done.signal() }
            let box = Unmanaged.passRetained(HandlerBox(dispatch))
            var slot: OpaquePointer?
            let code = add(handle, box.toOpaque(), &slot)
            guard code >= 0, let slot else {
                box.release()
                outcome.withLock { $0 = .system(code: code, while: what) }
                return
            }
            Self.releaseOnDestroy(slot, box.toOpaque())
            slotBox.withLock { $0 = SlotBox(slot) }
        }
        if isBusThread {
            // Already on the bus thread: register now, not after this job returns.
            guard let handle = currentHandle.withLock({ $0 }) else { throw DBusError.notConnected }
            register(handle)
        } else {
            perform(orFail: { error in
                outcome.withLock { $0 = error }
                done.signal()
            }, register)
            done.wait()
        }
        if let error = outcome.withLock({ $0 }) { throw error }
        return DBusRegistration { [weak self] in
            // A closed connection freed its slots with the bus.
            guard let slot = slotBox.withLock({ $0.take() }), let self, self.thread.withLock({ $0 != nil }) else { return }
            if self.isBusThread {
                sd_bus_slot_unref(slot.slot)
                return
            }
            // Ended when cancel() returns: no call or signal reaches the handler after it.
            let done = DispatchSemaphore(value: 0)
            self.perform(orFail: { _ in done.signal() }) { _ in
                sd_bus_slot_unref(slot.slot)
                done.signal()
            }
            _ = done.wait(timeout: .now() + 5)
        }
    }

    private let currentHandle = Mutex<Handle?>(nil)

    private func run(_ handle: Handle, waker: Waker) {
        state.withLock { $0.threadID = pthread_self() }
        currentHandle.withLock { $0 = handle }
        defer { currentHandle.withLock { $0 = nil } }
        while !waker.isWoken {
            var count: UInt64 = 0
            _ = read(jobSignal, &count, 8)
            for job in jobs.withLock({ q -> [@Sendable (Handle) -> Void] in defer { q = [] }; return q }) {
                job(handle)
            }
            // Everything sd-bus has read or can read without waiting.
            while true {
                let code = sd_bus_process(handle.bus, nil)
                if code < 0 {
                    lose(.system(code: code, while: "reading from the \(bus)"))
                    return
                }
                if code == 0 { break }
            }
            let fd = sd_bus_get_fd(handle.bus)
            let events = sd_bus_get_events(handle.bus)
            guard fd >= 0, events >= 0 else {
                lose(.system(code: min(fd, events), while: "watching the \(bus)"))
                return
            }
            var deadline: UInt64 = .max
            _ = sd_bus_get_timeout(handle.bus, &deadline)
            let timeout: TimeInterval? = deadline == .max ? nil : max(0, Double(deadline) / 1e6 - Self.monotonicSeconds())
            _ = Poll.wait([(fd: waker.fd, events: Int16(POLLIN)), (fd: jobSignal, events: Int16(POLLIN)),
                           (fd: fd, events: Int16(truncatingIfNeeded: events))], timeout: timeout)
        }
        // Jobs handed over while stopping fail rather than wait for ever.
        for job in jobs.withLock({ q -> [@Sendable (Handle) -> Void] in defer { q = [] }; return q }) {
            job(handle)
        }
    }

    private func lose(_ reason: DBusError) {
        state.withLock { $0.lost = $0.lost ?? reason }
        let handlers = lostHandlers.withLock { h -> [@Sendable (DBusError) -> Void] in defer { h = [] }; return h }
        for handler in handlers { handler(reason) }
        // What was queued will never run on this connection.
        let pending = jobs.withLock { q -> [@Sendable (Handle) -> Void] in defer { q = [] }; return q }
        if !pending.isEmpty, let handle = currentHandle.withLock({ $0 }) {
            for job in pending { job(handle) }
        }
    }

    private static func monotonicSeconds() -> TimeInterval {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return TimeInterval(now.tv_sec) + TimeInterval(now.tv_nsec) / 1e9
    }

    // MARK: sd-bus plumbing

    private static func open(address: String, into raw: inout OpaquePointer?) -> Int32 {
        var bus: OpaquePointer?
        var code = sd_bus_new(&bus)
        guard code >= 0, let bus else { return code }
        code = address.withCString { sd_bus_set_address(bus, $0) }
        if code >= 0 { code = sd_bus_set_bus_client(bus, 1) }
        if code >= 0 { code = sd_bus_start(bus) }
        guard code >= 0 else {
            sd_bus_unref(bus)
            return code
        }
        raw = bus
        return 0
    }

    private static func newCall(_ call: DBusMethodCall, on bus: OpaquePointer) throws(DBusError) -> OpaquePointer {
        var message: OpaquePointer?
        let code = call.destination.withCString { destination in
            call.path.withCString { path in
                call.interface.withCString { interface in
                    call.member.withCString { member in
                        sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
                    }
                }
            }
        }
        guard code >= 0, let message else { throw DBusError.system(code: code, while: "making a call to \(call.member)") }
        do throws(DBusError) {
            try DBusMessageCodec.append(call.arguments, to: message)
        } catch {
            sd_bus_message_unref(message)
            throw error
        }
        return message
    }

    private static func result(of message: OpaquePointer) -> Result<[DBusValue], DBusError> {
        if sd_bus_message_is_method_error(message, nil) != 0 {
            let error = sd_bus_message_get_error(message)
            let name = error?.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
            let text = error?.pointee.message.map { String(cString: $0) } ?? ""
            return .failure(.remote(name: name, message: text))
        }
        do throws(DBusError) {
            return .success(try DBusMessageCodec.readAll(message))
        } catch {
            return .failure(error)
        }
    }

    private static func releaseOnDestroy(_ slot: OpaquePointer, _ userdata: UnsafeMutableRawPointer) {
        _ = sd_bus_slot_set_destroy_callback(slot) { userdata in
            guard let userdata else { return }
            Unmanaged<AnyObject>.fromOpaque(userdata).release()
        }
    }

    /// The one callback of subscriptions and exported objects: reads the message and hands
    /// it to the registration's handler; answers a method call with what it returns.
    private static let messageCallback: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        let box = Unmanaged<HandlerBox>.fromOpaque(userdata).takeUnretainedValue()
        let arguments = (try? DBusMessageCodec.readAll(message)) ?? []
        let received = DBusMessage(sender: DBusMessageCodec.header(sd_bus_message_get_sender, of: message),
                                   path: DBusMessageCodec.header(sd_bus_message_get_path, of: message),
                                   interface: DBusMessageCodec.header(sd_bus_message_get_interface, of: message),
                                   member: DBusMessageCodec.header(sd_bus_message_get_member, of: message),
                                   arguments: arguments)
        let answer = box.handle(received)
        guard sd_bus_message_is_method_call(message, nil, nil) != 0 else { return 0 }
        switch answer {
        case .unknown:
            return 0
        case .values(let values):
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return 0 }
            defer { sd_bus_message_unref(reply) }
            do throws(DBusError) {
                try DBusMessageCodec.append(values, to: reply)
            } catch {
                return 0
            }
            _ = sd_bus_send(nil, reply, nil)
            return 1
        case .error(let name, let text):
            return name.withCString { name in
                text.withCString { text in
                    var error = sd_bus_error(name: name, message: text, _need_free: 0)
                    _ = sd_bus_reply_method_error(message, &error)
                    return 1
                }
            }
        }
    }
}

private final class ReplyBox: @unchecked Sendable {
    private var reply: (@Sendable (Result<[DBusValue], DBusError>) -> Void)?
    init(_ reply: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void) { self.reply = reply }
    /// On the bus thread only: once.
    func deliver(_ result: Result<[DBusValue], DBusError>) {
        reply?(result)
        reply = nil
    }
}

private final class HandlerBox: Sendable {
    let handle: @Sendable (DBusMessage) -> DBusReply
    init(_ handle: @escaping @Sendable (DBusMessage) -> DBusReply) { self.handle = handle }
}

private final class SlotBox: @unchecked Sendable {
    let slot: OpaquePointer
    init(_ slot: OpaquePointer) { self.slot = slot }
}
