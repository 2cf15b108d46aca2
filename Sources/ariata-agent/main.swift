import Daemon

// `run` and `sync` live long: one malloc arena before any thread starts, and the pages the
// loader and the runtime's start touched dropped before the arguments are parsed
// (docs/architecture.md, Memory).
if let command = CommandLine.arguments.dropFirst().first, command == "run" || command == "sync" {
    MemoryFootprint.limitMallocArenas()
    MemoryFootprint.dropMappedFilePages()
}

// Swift concurrency's jobs run on this thread, not on libdispatch's workers, whose watch
// would wake the daemon every second (docs/decisions/0006-main-thread-executor.md).
MainThreadExecutor.run { await AriataAgent.main() }
