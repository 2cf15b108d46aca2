import Synchronization

/// Set when a write to the queue failed because the disk is full (SQLITE_FULL), so that
/// the storage guard runs soon instead of waiting for free space to look low: a write can
/// fail while `statvfs` still shows a little room (a large transaction), and a full disk
/// must not wait for the next health tick if something can act sooner.
public final class StoragePressure: Sendable {
    private let raised = Atomic<Bool>(false)
    private let handler = Mutex<(@Sendable () -> Void)?>(nil)

    public init() {}

    /// Called by the queue on SQLITE_FULL; runs the handler (which must not block).
    public func raise() {
        raised.store(true, ordering: .sequentiallyConsistent)
        handler.withLock { $0 }?()
    }

    /// Whether a write failed since the last call; clears the flag.
    public func take() -> Bool {
        raised.exchange(false, ordering: .sequentiallyConsistent)
    }

    /// What to run when a write fails for lack of space (the daemon asks for a guard pass).
    public func onRaise(_ body: (@Sendable () -> Void)?) {
        handler.withLock { $0 = body }
    }
}
