import CThread
import Dispatch
import Foundation
import Synchronization

/// The one way the agent runs blocking work on a thread of its own (the gpsd reader,
/// ALSA capture, each health source, the backfill, the network watch, the service's start
/// and stop):
///
/// - the kernel knows the thread by its name (`top -H`, `ps -L`, /proc/<pid>/task/*/comm),
///   set with pthread_setname_np before the work begins;
/// - the work gets a `Waker` that is its stop flag and the thing it sleeps on, so a stop
///   can never be missed between two waits;
/// - `stop()` wakes the work and joins the thread; with a time limit (measured on the
///   monotonic clock) for work that may hang in a call nothing interrupts, after which the
///   thread is left to end by itself.
public final class NamedThread: Sendable {
    /// The name as the kernel keeps it: at most 15 bytes.
    public let name: String
    /// Woken by `stop()`: the work sleeps on it and returns once it is woken.
    public let waker: Waker
    /// Signalled once the work has returned (and signalled again by every joiner, so that
    /// it stays signalled).
    private let ended: DispatchSemaphore
    /// Until joined or detached.
    private let handle: Mutex<pthread_t?>

    /// The kernel's limit on a thread name, without its terminating NUL.
    public static let maxNameBytes = 15

    /// Starts `work` on a new thread called `name` (cut to 15 bytes). Throws when the
    /// system gives no thread or no pipe for the waker.
    public init(name: String, work: @escaping @Sendable (Waker) -> Void) throws {
        self.name = Self.kernelName(name)
        let waker = try Waker()
        self.waker = waker
        let ended = DispatchSemaphore(value: 0)
        self.ended = ended
        let start = Unmanaged.passRetained(Start(name: self.name, waker: waker, ended: ended, work: work)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            Unmanaged<Start>.fromOpaque(argument).takeRetainedValue().run()
            return nil
        }, start)
        guard result == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EAGAIN)
        }
        handle = Mutex(thread)
    }

    /// A thread nobody can stop any more is told to stop and cleans up after itself.
    deinit {
        if let thread = handle.withLock({ $0.take() }) {
            waker.wake()
            pthread_detach(thread)
        }
    }

    /// Wakes the work and waits until it has returned (nil: however long that takes).
    /// False when `timeout` passed first; the thread then ends by itself.
    @discardableResult
    public func stop(timeout: TimeInterval? = nil) -> Bool {
        waker.wake()
        return join(timeout: timeout)
    }

    /// Waits until the work has returned, without asking it to stop.
    @discardableResult
    public func join(timeout: TimeInterval? = nil) -> Bool {
        // DispatchTime is the monotonic clock.
        let finished = timeout.map { ended.wait(timeout: .now() + max(0, $0)) == .success } ?? {
            ended.wait()
            return true
        }()
        if finished { ended.signal() }
        if let thread = handle.withLock({ $0.take() }) {
            if finished { pthread_join(thread, nil) } else { pthread_detach(thread) }
        }
        return finished
    }

    /// Runs `work` on a thread of its own and waits for it without holding one of Swift
    /// concurrency's few cooperative threads (joining capture threads, fsyncs).
    public static func run(name: String, _ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            do {
                _ = try NamedThread(name: name) { _ in
                    work()
                    done.resume()
                }
            } catch {
                // No thread to be had (the process is at its limit): the work must run all the same.
                work()
                done.resume()
            }
        }
    }

    /// The longest prefix of `name` that fits the kernel's 15 bytes, whole characters only.
    static func kernelName(_ name: String) -> String {
        var kept = ""
        for character in name {
            guard kept.utf8.count + character.utf8.count <= maxNameBytes else { break }
            kept.append(character)
        }
        return kept
    }

    /// What the new thread needs, handed over through pthread_create's one pointer.
    private final class Start {
        let name: String
        let waker: Waker
        let ended: DispatchSemaphore
        let work: @Sendable (Waker) -> Void

        init(name: String, waker: Waker, ended: DispatchSemaphore, work: @escaping @Sendable (Waker) -> Void) {
            self.name = name
            self.waker = waker
            self.ended = ended
            self.work = work
        }

        func run() {
            _ = pthread_setname_np(pthread_self(), name)
            work(waker)
            ended.signal()
        }
    }
}
