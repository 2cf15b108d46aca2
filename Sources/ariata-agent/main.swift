import Daemon

// Swift concurrency's jobs run on this thread, not on libdispatch's workers, whose watch
// would wake the daemon every second (README, "Wake-ups").
MainThreadExecutor.run { await AriataAgent.main() }
