import DBus
import Foundation
import Logging
import Synchronization

/// Sends desktop notices to the person's notification server:
/// `org.freedesktop.Notifications.Notify` on the session bus, which the user service
/// reaches and the system service does not (docs/laptop.md#desktop-notices). The service is
/// a `DBusService` on the process's shared session-bus connection, joined at the first
/// notice, not before; its thread (`ariata-userbus`) sleeps in poll(2) with no time-out
/// between notices. A problem (no session bus, no notification server) is logged once
/// while it lasts; the next notice tries again, on a new connection when the bus was lost.
public final class DesktopNotifier: NoticeSink {
    public static let appName = "Ariata agent"
    public static let service = "org.freedesktop.Notifications"
    public static let path = "/org/freedesktop/Notifications"

    private let bus: DBusBus
    private let logger: Logger
    /// From the first notice on.
    private let service = Mutex<DBusService?>(nil)
    private let problem = Mutex<String?>(nil)

    public init(bus: DBusBus = .session, logger: Logger) {
        self.bus = bus
        self.logger = logger
    }

    public func send(_ notice: DesktopNotice) {
        guard let connection = connected() else { return }
        // Normal urgency (1), or critical (2): shown until dismissed.
        let hints = DBusValue.dictionary(["urgency": .byte(notice.urgent ? 2 : 1)])
        let call = DBusMethodCall(destination: Self.service, path: Self.path, interface: Self.service, member: "Notify",
                                  arguments: [.string(Self.appName), .uint32(0), .string(""), .string(notice.summary),
                                              .string(notice.body), .array(element: "s", []), hints, .int32(-1)])
        connection.call(call, timeout: 10) { [self] result in
            switch result {
            case .success:
                logger.notice("desktop notice shown: \(notice.summary): \(notice.body)")
                cleared()
            case .failure(let error) where error.isServiceMissing:
                failed("no notification server on the \(bus) (no desktop session?): \(notice.summary): \(notice.body)")
            case .failure(let error):
                failed("the notification server refused a notice (\(error)): \(notice.summary): \(notice.body)")
            }
        }
    }

    /// The connection, made when missing or lost.
    private func connected() -> DBusConnection? {
        let service = service.withLock { current -> DBusService in
            if let current { return current }
            let made = DBusService(Self.service, bus: bus)
            current = made
            return made
        }
        do {
            return try service.connection()
        } catch {
            failed("cannot send desktop notices: \(error); a system service has no session bus ([notify] enabled = false turns them off)")
            return nil
        }
    }

    private func failed(_ message: String) {
        let first = problem.withLock { last -> Bool in
            defer { last = message }
            return last == nil
        }
        if first { logger.warning("\(message)") } else { logger.debug("\(message)") }
    }

    private func cleared() {
        problem.withLock { $0 = nil }
    }
}
