import Foundation
import Platform

/// Runs Swift concurrency's jobs on the program's main thread instead of libdispatch's
/// worker pool (docs/decisions/0006-main-thread-executor.md).
///
/// Why: on Linux, libdispatch watches the workers of its default global queues with a
/// timer that fires every second, without leeway, from the moment the first such worker
/// starts until the process ends. Swift concurrency's default executor runs every job that
/// has no executor of its own on those queues, so the first `await` of `ariata-agent run`
/// (the service lifecycle's) would make the daemon wake once a second for the rest of its
/// life. `run` starts the program's one task with this executor as its task executor
/// preference (a public API of the language, SE-0417): the task's jobs, those of its child
/// tasks and of the default actors they call come here, and the main thread drains them.
/// The serial Dispatch queues of the daemon's timers, the chunk writer and the uploader run
/// on libdispatch's overcommit workers, which that timer does not watch; capture runs on
/// threads of its own.
///
/// One thread runs every job, so a job must not block for long: the service lifecycle's
/// jobs are short and hand blocking work to `NamedThread.run`. What does not inherit the
/// preference goes to the global queues and would start the watch again: an unstructured
/// `Task {}` or `Task.detached`, `Task.sleep`'s wake-up, and `@MainActor` code (its jobs go
/// to Dispatch's main queue, which nothing drains here). The daemon uses none of them.
public final class MainThreadExecutor: TaskExecutor, @unchecked Sendable {
    private static let shared = MainThreadExecutor()

    private let condition = ThreadCondition()
    // Guarded by `condition`.
    private var pending: [UnownedJob] = []

    private init() {}

    /// Starts `main` as a task that prefers this executor and runs its jobs on the calling
    /// thread (the main thread) until `main` returns; then exits with status 0 (`main`
    /// exits by itself with any other).
    public static func run(_ main: @escaping @Sendable () async -> Void) -> Never {
        Task(executorPreference: shared) {
            await main()
            exit(0)
        }
        shared.drain()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        condition.lock()
        pending.append(UnownedJob(job))
        condition.signal()
        condition.unlock()
    }

    private func drain() -> Never {
        var batch: [UnownedJob] = []
        while true {
            condition.lock()
            while pending.isEmpty { condition.wait() }
            swap(&batch, &pending)
            condition.unlock()
            for job in batch {
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
