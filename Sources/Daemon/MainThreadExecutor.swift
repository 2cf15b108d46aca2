import CConcurrencyHooks
import Foundation

/// Runs Swift concurrency's jobs on the program's main thread instead of libdispatch's
/// worker pool (docs/decisions/0006-main-thread-executor.md).
///
/// Why: on Linux, libdispatch watches the workers of its default global queues with a
/// timer that fires every second, without leeway, from the moment the first such worker
/// starts until the process ends. Swift concurrency's own executor runs every job that has
/// no actor of its own on those queues, so the first `await` of `ariata-agent run` (the
/// service lifecycle's) made the daemon wake once a second for the rest of its life: half
/// of its wake-ups once capture had been trimmed. The runtime has a hook for its global
/// executor and one for its main executor (the hooks SwiftNIO sets to run Swift
/// concurrency on its event loops); `run` sets both, before the first task, to one queue
/// that the main thread drains. The serial Dispatch queues of the daemon's timers, the
/// chunk writer and the uploader run on libdispatch's overcommit workers, which that timer
/// does not watch; capture runs on threads of its own.
///
/// One thread runs every job, so a job must not block for long: the service lifecycle's
/// jobs are short and hand blocking work to `NamedThread.run`. `Task.sleep` does not go
/// through the hook (the runtime schedules a sleep's wake-up on Dispatch's global queue
/// itself) and would start the watch again: the program does not sleep in tasks.
public final class MainThreadExecutor: TaskExecutor, @unchecked Sendable {
    /// The one instance the hooks hand jobs to (a hook cannot capture).
    static let shared = MainThreadExecutor()

    private let condition = NSCondition()
    // Guarded by `condition`. A job and whether it was enqueued for the main actor.
    private var pending: [(job: UnownedJob, mainActor: Bool)] = []

    private init() {}

    /// Sets the hooks, starts `main` as a task and runs jobs on the calling thread (the
    /// main thread) until `main` returns; then exits with status 0 (`main` exits by
    /// itself with any other).
    public static func run(_ main: @escaping @Sendable () async -> Void) -> Never {
        installHooks()
        Task {
            await main()
            exit(0)
        }
        shared.drain()
    }

    private typealias Original = @convention(thin) (UnownedJob) -> Void
    private typealias Hook = @convention(thin) (UnownedJob, Original) -> Void

    private static func installHooks() {
        let global: Hook = { job, _ in MainThreadExecutor.shared.append(job, mainActor: false) }
        let main: Hook = { job, _ in MainThreadExecutor.shared.append(job, mainActor: true) }
        UnsafeMutableRawPointer(ariata_enqueue_global_hook()).storeBytes(of: global, as: Hook.self)
        UnsafeMutableRawPointer(ariata_enqueue_main_hook()).storeBytes(of: main, as: Hook.self)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        append(UnownedJob(job), mainActor: false)
    }

    private func append(_ job: UnownedJob, mainActor: Bool) {
        condition.lock()
        pending.append((job, mainActor))
        condition.signal()
        condition.unlock()
    }

    private func drain() -> Never {
        var batch: [(job: UnownedJob, mainActor: Bool)] = []
        while true {
            condition.lock()
            while pending.isEmpty { condition.wait() }
            swap(&batch, &pending)
            condition.unlock()
            for entry in batch {
                // A main-actor job runs as the main actor's (this is the main thread), any
                // other as the global executor's.
                if entry.mainActor {
                    entry.job.runSynchronously(on: MainActor.sharedUnownedExecutor)
                } else {
                    entry.job.runSynchronously(on: asUnownedTaskExecutor())
                }
            }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
