import Daemon

// Swift concurrency's jobs run on this thread, not on libdispatch's workers, whose watch
// would wake the daemon every second (docs/decisions/0006-main-thread-executor.md).
MainThreadExecutor.run { await AriataAgent.main() }
