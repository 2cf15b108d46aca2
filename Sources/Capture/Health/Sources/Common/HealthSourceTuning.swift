import AgentCore

/// The health sources' waits, in one place. They are constant, not growing: each is one
/// cheap local check (a file, a directory, a device node), and a source that comes back
/// should be read again within these seconds.
enum HealthSourceTuning {
    /// After a step that failed: the directory missing, the anchor unreadable, a file that
    /// would not open, a commit the queue refused.
    static let retry = Backoff.constant(5)
    /// A file the service user may not read (E005): the fix takes a person.
    static let permissionRetry = Backoff.constant(30)
    /// Looking at a file again where inotify is not available.
    static let pollWithoutInotify = Backoff.constant(2)
    /// Opening a serial device again that is unplugged (udev usually announces it first).
    static let serialReopen = Backoff.constant(1)
    /// Between starts of a source whose reading stopped (its thread returned): it is
    /// started again alone, sooner at first, at most every five minutes when it keeps failing.
    static let restartAlone = Backoff(base: 5, cap: 300)
}
