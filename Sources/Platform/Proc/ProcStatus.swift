import Foundation

/// A size the kernel gives in kB: 1,024 bytes (proc(5)).
public struct KiB: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var value: Int

    public init(_ value: Int) { self.value = value }

    public static let zero = KiB(0)
    public var bytes: Int { value * 1_024 }
    public var mebibytes: Double { Double(value) / 1_024 }
    public var description: String { "\(value) kB" }

    public static func < (lhs: KiB, rhs: KiB) -> Bool { lhs.value < rhs.value }
}

/// One reading of a process's or a thread's `status` file (/proc/PID/status,
/// /proc/PID/task/TID/status): the one parser of it for the tests and the benchmarks.
/// Sizes (the lines whose value ends in " kB") are `KiB`, counts are plain numbers; a line
/// of the other kind, or missing, is nil (a kernel thread has no Vm lines).
public struct ProcStatus: Sendable, Equatable {
    /// The thread's or process's name (`comm`, at most 15 bytes).
    public var name: String?
    /// VmHWM: the kernel's high-water mark of the resident set. It rises only when pages
    /// leave the process by an unmap or a zap, so it can miss a peak (docs/development.md,
    /// Benchmarks): sample `residentSet` too.
    public var highWaterMark: KiB?
    /// VmRSS, and its split: RssAnon (private: heap, stacks, relocated data) and RssFile
    /// (file-backed: code, libraries).
    public var residentSet: KiB?
    public var residentAnonymous: KiB?
    public var residentFile: KiB?
    /// Each time the thread gave up the CPU (slept in poll, waited for a lock or the disk),
    /// and each time it was made to.
    public var voluntaryContextSwitches: Int?
    public var involuntaryContextSwitches: Int?

    public init(parsing text: String) {
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = line[..<colon]
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch key {
            case "Name": name = value
            case "VmHWM": highWaterMark = Self.size(value)
            case "VmRSS": residentSet = Self.size(value)
            case "RssAnon": residentAnonymous = Self.size(value)
            case "RssFile": residentFile = Self.size(value)
            case "voluntary_ctxt_switches": voluntaryContextSwitches = Int(value)
            case "nonvoluntary_ctxt_switches": involuntaryContextSwitches = Int(value)
            default: continue
            }
        }
    }

    /// Reads a status file; nil when it cannot be read (the process or thread has gone).
    public init?(path: String) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        self.init(parsing: text)
    }

    /// Process `pid`'s status, or this process's.
    public init?(pid: Int32) { self.init(path: "/proc/\(pid)/status") }
    public static func own() -> ProcStatus? { ProcStatus(path: "/proc/self/status") }

    /// "1736 kB": a size; anything else (a count, a size in another unit) is not.
    private static func size(_ value: String) -> KiB? {
        let parts = value.split(separator: " ")
        guard parts.count == 2, parts[1] == "kB", let number = Int(parts[0]) else { return nil }
        return KiB(number)
    }
}
