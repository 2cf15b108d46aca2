import Foundation
import Platform

/// The kernel's count of a thread's voluntary context switches (each time it gave up the
/// CPU: slept in poll, waited for a lock or for the disk): how tests count wake-ups
/// without timing anything.
public enum ThreadSwitches {
    /// The sum over this process's threads called `name` (/proc/self/task/*/status, its Name); nil when
    /// there is none.
    public static func voluntary(named name: String) -> Int? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var total: Int?
        for task in tasks {
            guard let status = ProcStatus(path: "/proc/self/task/\(task)/status"), status.name == name,
                  let count = status.voluntaryContextSwitches
            else { continue }
            total = (total ?? 0) + count
        }
        return total
    }

    /// Each thread of process `pid`: its name and its voluntary switches so far.
    public static func voluntaryByThread(pid: Int32) -> [(name: String, switches: Int)] {
        let directory = "/proc/\(pid)/task"
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return tasks.sorted().compactMap { task in
            guard let status = ProcStatus(path: "\(directory)/\(task)/status"),
                  let count = status.voluntaryContextSwitches
            else { return nil }
            return ("\(task) \(status.name ?? "?")", count)
        }
    }
}
