import Foundation

/// The kernel's count of a thread's voluntary context switches (each time it gave up the
/// CPU: slept in poll, waited for a lock or for the disk): how tests count wake-ups
/// without timing anything.
public enum ThreadSwitches {
    /// The sum over this process's threads called `name` (/proc/self/task/*/comm); nil when
    /// there is none.
    public static func voluntary(named name: String) -> Int? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var total: Int?
        for task in tasks {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            guard comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                  let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") }),
                  let count = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
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
            let comm = (try? String(contentsOfFile: "\(directory)/\(task)/comm", encoding: .utf8)) ?? "?"
            guard let status = try? String(contentsOfFile: "\(directory)/\(task)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") }),
                  let count = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
            else { return nil }
            return ("\(task) \(comm.trimmingCharacters(in: .whitespacesAndNewlines))", count)
        }
    }
}
