import AgentCore
import Capture
import Foundation
import Logging
import Platform
import Rigs

/// CPU time and wakeups of the location stream per minute while gpsd delivers a fix every
/// second: `swift run -c release ariata-bench location [--seconds 60] [--interval 10]`.
///
/// A real gpsd (the test rig: socat pty pair + gpsd on a free port) gets one NMEA epoch per
/// second from a feeder in a child process, so this process holds only the stream: its
/// thread (which reads gpsd and samples) and the SQLite writes. Costs come from getrusage
/// (the whole process, threads that came and went included) and from
/// /proc/self/task/<tid> for the location thread alone.
enum LocationBench {
    static func run(_ options: Options) throws {
        if let feedPath = options.feedPath {
            try feed(path: feedPath, seconds: options.seconds)
            return
        }
        try measure(options)
    }

    /// `ariata-bench location`'s options (AriataBench.swift); `feedPath` is set in the
    /// feeder child the benchmark runs itself as.
    struct Options {
        var seconds: Int
        var interval: Int
        var warmup: Int
        var feedPath: String?
    }

    private static func measure(_ options: Options) throws {
        let rig = try GPSDRig()
        let directory = try TemporaryDirectory("ariata-bench-location")
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        var config = LocationConfig()
        config.gpsdHost = "127.0.0.1"
        config.gpsdPort = rig.port
        config.interval = options.interval
        var logger = Logger(.location)
        logger.logLevel = .warning
        let stream = LocationStream(config: config, queue: database.recordQueue, logger: logger)
        stream.start()
        defer { stream.stop() }
        try waitUntil("the stream to connect to gpsd") { stream.status().connected }

        let feeder = try ChildProcess("/proc/self/exe", [
            "location", "--feed", rig.feedPath, "--seconds", String(options.warmup + options.seconds + 5),
        ], name: "nmea-feeder", logDirectory: directory.path)
        defer { feeder.stop(grace: 1) }
        try waitUntil("the first fix", timeout: 20) { stream.status().lastFixAge != nil }
        Thread.sleep(forTimeInterval: TimeInterval(options.warmup))

        let reader = ThreadUsage.find(named: "ariata-location")
        let gpsdPID = rig.gpsdPID
        let recordsBefore = try database.recordQueue.count(stream: .location, status: .pending)
        let processBefore = ProcessUsage.now()
        let readerBefore = reader.flatMap(ThreadUsage.read)
        let gpsdBefore = gpsdPID.flatMap(ThreadUsage.readProcess)
        let started = Date()

        Thread.sleep(forTimeInterval: TimeInterval(options.seconds))

        let elapsed = Date().timeIntervalSince(started)
        let processAfter = ProcessUsage.now()
        let readerAfter = reader.flatMap(ThreadUsage.read)
        let gpsdAfter = gpsdPID.flatMap(ThreadUsage.readProcess)
        let records = try database.recordQueue.count(stream: .location, status: .pending) - recordsBefore
        let perMinute = 60 / elapsed

        print("location bench: \(String(format: "%.1f", elapsed)) s measured, a fix every 1 s from gpsd \(rig.port), "
            + "a record every \(options.interval) s")
        print("  records written: \(records) (expected about \(Int(elapsed) / options.interval))")
        let process = processAfter - processBefore
        print("  whole stream (the location thread, SQLite writes), per minute:")
        print(String(format: "    CPU time: %.1f ms (user %.1f ms, system %.1f ms)",
                     process.cpuMilliseconds * perMinute, process.userMilliseconds * perMinute,
                     process.systemMilliseconds * perMinute))
        print(String(format: "    wakeups (voluntary context switches): %.0f; involuntary switches: %.0f",
                     process.voluntarySwitches * perMinute, process.involuntarySwitches * perMinute))
        if let readerBefore, let readerAfter {
            let thread = readerAfter - readerBefore
            print(String(format: "  location thread alone, per minute: CPU %.1f ms, wakeups %.0f",
                         thread.cpuMilliseconds * perMinute, thread.voluntarySwitches * perMinute))
        } else {
            print("  location thread alone: not found in /proc/self/task")
        }
        if let gpsdBefore, let gpsdAfter {
            let daemon = gpsdAfter - gpsdBefore
            print(String(format: "  gpsd itself (for reference, not the agent), per minute: CPU %.1f ms",
                         daemon.cpuMilliseconds * perMinute))
        }
    }

    /// The feeder child: one epoch per wall-clock second, times equal to the wall clock.
    private static func feed(path: String, seconds: Int) throws {
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw BenchFailure("cannot open \(path) for writing")
        }
        let start = Date().timeIntervalSince1970.rounded(.down)
        let drive = NMEADrive.synthetic(epochs: seconds, start: Date(timeIntervalSince1970: start))
        for (index, epoch) in drive.enumerated() {
            try handle.write(contentsOf: Data(NMEADrive.sentences(for: epoch).utf8))
            let next = Date(timeIntervalSince1970: start + Double(index + 1))
            Thread.sleep(until: next)
        }
    }
}

/// CPU and context switches of the whole process, from getrusage.
private struct ProcessUsage {
    var userMilliseconds: Double
    var systemMilliseconds: Double
    var voluntarySwitches: Double
    var involuntarySwitches: Double

    var cpuMilliseconds: Double { userMilliseconds + systemMilliseconds }

    static func now() -> ProcessUsage {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func ms(_ t: timeval) -> Double { Double(t.tv_sec) * 1000 + Double(t.tv_usec) / 1000 }
        return ProcessUsage(userMilliseconds: ms(usage.ru_utime), systemMilliseconds: ms(usage.ru_stime),
                            voluntarySwitches: Double(usage.ru_nvcsw), involuntarySwitches: Double(usage.ru_nivcsw))
    }

    static func - (lhs: ProcessUsage, rhs: ProcessUsage) -> ProcessUsage {
        ProcessUsage(userMilliseconds: lhs.userMilliseconds - rhs.userMilliseconds,
                     systemMilliseconds: lhs.systemMilliseconds - rhs.systemMilliseconds,
                     voluntarySwitches: lhs.voluntarySwitches - rhs.voluntarySwitches,
                     involuntarySwitches: lhs.involuntarySwitches - rhs.involuntarySwitches)
    }
}

/// CPU (nanosecond schedstat) and voluntary switches of one thread or process from /proc.
private struct ThreadUsage {
    var cpuMilliseconds: Double
    var voluntarySwitches: Double

    static func find(named prefix: String) -> String? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.first { tid in
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
            return comm.hasPrefix(prefix)
        }.map { "/proc/self/task/\($0)" }
    }

    static func read(_ directory: String) -> ThreadUsage? {
        guard let schedstat = try? String(contentsOfFile: "\(directory)/schedstat", encoding: .utf8),
              let runNanoseconds = schedstat.split(separator: " ").first.flatMap({ Double($0) }),
              let status = ProcStatus(path: "\(directory)/status")
        else { return nil }
        return ThreadUsage(cpuMilliseconds: runNanoseconds / 1e6, voluntarySwitches: Double(status.voluntaryContextSwitches ?? 0))
    }

    static func readProcess(_ pid: Int32) -> ThreadUsage? {
        read("/proc/\(pid)")
    }

    static func - (lhs: ThreadUsage, rhs: ThreadUsage) -> ThreadUsage {
        ThreadUsage(cpuMilliseconds: lhs.cpuMilliseconds - rhs.cpuMilliseconds,
                    voluntarySwitches: lhs.voluntarySwitches - rhs.voluntarySwitches)
    }
}
