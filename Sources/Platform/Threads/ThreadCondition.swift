import Glibc

/// A pthread mutex and condition variable: what `NSCondition` is, without Foundation's code
/// (the daemon's main thread waits on one for every job it runs, and Foundation's would stay
/// in its resident set for that alone: docs/decisions/0005-start-up-page-drop.md).
public final class ThreadCondition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Wakes one thread waiting in `wait()`; call it holding the lock.
    public func signal() { pthread_cond_signal(condition) }

    /// Gives up the lock until signalled, then holds it again; it may also return without a
    /// signal, so wait in a loop on the condition itself.
    public func wait() { pthread_cond_wait(condition, mutex) }
}
