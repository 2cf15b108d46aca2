import AgentCore
import Capture
import Foundation
import Logging
import Platform
import Rigs

/// `ariata-bench audio [--seconds N] [--complexity C] [--dir D]`: CPU time to capture and
/// encode N seconds (default one hour) of speech through the ALSA file plugin into 30 s
/// Ogg Opus chunks written to a real SQLite queue, against `opusenc --raw --raw-rate 16000
/// --raw-chan 1 --bitrate 16` on the same PCM, in the same run; and the peak RSS.
///
/// The file plugin reads as fast as the reader asks, so an hour takes well under an hour.
enum AudioBench {
    static func run(seconds: Int, complexity: Int, quietBitrate: Int? = nil, work directory: WorkDirectoryOption) throws {
        let work = try directory.workDirectory("audio")
        defer { try? FileManager.default.removeItem(atPath: work) }

        resetPeakRSS()
        let pcm = try makeSpeech(seconds: seconds, in: work)
        // The tests' own ALSA file-plugin device.
        let rig = try ALSARig(input: pcm, device: "ariata_bench_mic")
        defer { withExtendedLifetime(rig) {} }
        let device = rig.device
        print("input: \(seconds) s of espeak-ng speech, 16 kHz S16_LE mono, through the ALSA file plugin")

        // The stream first, so the process's peak RSS is the stream's, not the tools'.
        let rssBefore = peakRSSKiB()
        let stream = try streamRun(seconds: seconds, device: device, complexity: complexity, quietBitrate: quietBitrate, in: work)
        let reference = try opusencRun(pcm: pcm, in: work)

        print(String(format: "stream:  %.2f s CPU (%.2f user + %.2f sys), %.1f s wall, %d chunks, %.0f bytes/chunk avg, %d overruns",
                     stream.cpu.total, stream.cpu.user, stream.cpu.system, stream.wall, stream.chunks, stream.averageBytes, stream.overruns))
        print(String(format: "opusenc: %.2f s CPU (%.2f user + %.2f sys), %.1f s wall, %d bytes (%.0f bytes per 30 s)",
                     reference.cpu.total, reference.cpu.user, reference.cpu.system, reference.wall, reference.bytes,
                     Double(reference.bytes) * 30 / Double(seconds)))
        print(String(format: "ratio stream/opusenc CPU: %.3f (goal <= 1.1; the stream encodes each 2 s overlap twice: +%.1f%% audio)",
                     stream.cpu.total / reference.cpu.total, 200.0 / 28.0))
        print("peak RSS of the process: \(stream.peakRSSKiB / 1024) MiB after the stream (\(rssBefore / 1024) MiB before it started: runtime, Foundation, SQLite)")
    }

    struct CPU {
        var user: Double
        var system: Double
        var total: Double { user + system }
    }

    static func cpu(_ who: Int32) -> CPU {
        var usage = rusage()
        getrusage(__rusage_who_t(who), &usage)
        return CPU(user: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
                   system: Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6)
    }

    /// The process's resident-set high-water mark (VmHWM). `swift run` execs the benchmark
    /// in its own process, and the kernel keeps getrusage's ru_maxrss across exec, so the
    /// mark is reset first (clear_refs 5, Linux 4.0+) to count only this program.
    static func peakRSSKiB() -> Int { ProcStatus.own()?.highWaterMark?.value ?? 0 }

    static func resetPeakRSS() {
        let fd = open("/proc/self/clear_refs", O_WRONLY)
        guard fd >= 0 else { return }
        _ = write(fd, "5", 1)
        close(fd)
    }

    static func streamRun(seconds: Int, device: String, complexity: Int, quietBitrate: Int? = nil, in work: String)
        throws -> (cpu: CPU, wall: Double, chunks: Int, averageBytes: Double, overruns: Int, peakRSSKiB: Int) {
        let database = try AgentDatabase(path: "\(work)/queue.sqlite")
        var config = MicrophoneConfig()
        config.device = device
        config.complexity = complexity
        if let quietBitrate { config.quietBitrate = quietBitrate }
        let cpuStart = cpu(RUSAGE_SELF.rawValue)
        let wallStart = Date()
        let stream = runStream(config: config, database: database, frames: seconds * 16_000)
        let wall = Date().timeIntervalSince(wallStart)
        let cpuEnd = cpu(RUSAGE_SELF.rawValue)
        // Before the records are read back below, which loads them all.
        let peak = peakRSSKiB()
        let records = try database.recordQueue.records(stream: .microphone)
        let bytes = try records.map { record -> Int in
            let object = try JSONSerialization.jsonObject(with: record.payload) as? [String: Any]
            return Data(base64Encoded: object?["audio_data"] as? String ?? "")?.count ?? 0
        }
        let full = bytes.dropLast()
        return (CPU(user: cpuEnd.user - cpuStart.user, system: cpuEnd.system - cpuStart.system), wall, records.count,
                full.isEmpty ? 0 : Double(full.reduce(0, +)) / Double(full.count), stream.stats().overruns, peak)
    }

    /// Runs the real microphone stream on the benchmark's ALSA device until `frames` have
    /// been captured (the device opened once, through `wrap`), and stops it.
    @discardableResult
    static func runStream(config: MicrophoneConfig, database: AgentDatabase, frames: Int, journal: MicrophoneStream.Journaling? = nil,
                          wrap: @escaping @Sendable (any AudioCapture) -> any AudioCapture = { $0 }) -> MicrophoneStream {
        let ended = EndFlag()
        let opened = EndFlag()
        let stream = MicrophoneStream(
            config: config, queue: database.recordQueue, logger: Logger(.microphone),
            captureFactory: { device, rate throws(AudioCaptureError) in
                guard !opened.swap() else {
                    throw AudioCaptureError(kind: .notFound, device: device, detail: "benchmark input used up")
                }
                return wrap(EndingCapture(try ALSACapture(device: device, sampleRate: rate), frames: frames, ended: ended))
            },
            tuning: MicrophoneTuning(deviceRetry: .constant(3_600), maxClockSkew: nil), journal: journal)
        stream.start()
        while !ended.value { Thread.sleep(forTimeInterval: 0.05) }
        stream.stop()
        return stream
    }

    static func opusencRun(pcm: String, in work: String) throws -> (cpu: CPU, wall: Double, bytes: Int) {
        let output = "\(work)/reference.opus"
        let before = cpu(RUSAGE_CHILDREN.rawValue)
        let start = Date()
        try runTool("opusenc", ["--quiet", "--raw", "--raw-rate", "16000", "--raw-chan", "1", "--bitrate", "16", pcm, output])
        let wall = Date().timeIntervalSince(start)
        let after = cpu(RUSAGE_CHILDREN.rawValue)
        let size = (try FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
        return (CPU(user: after.user - before.user, system: after.system - before.system), wall, size)
    }

    /// espeak-ng reads a passage once; the raw audio is repeated to `seconds`, written in
    /// pieces so the benchmark process never holds the hour in memory.
    static func makeSpeech(seconds: Int, in work: String) throws -> String {
        let text = "\(work)/passage.txt"
        try passage.write(toFile: text, atomically: true, encoding: .utf8)
        try runTool("espeak-ng", ["-s", "165", "-f", text, "-w", "\(work)/passage.wav"])
        try runTool("sox", ["\(work)/passage.wav", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", "\(work)/passage.raw"])
        let once = try Data(contentsOf: URL(fileURLWithPath: "\(work)/passage.raw"))
        guard !once.isEmpty else { throw BenchFailure("espeak-ng and sox produced no audio") }
        let path = "\(work)/speech.raw"
        // Plain write(2) in a loop: nothing of the hour stays in this process's memory.
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw BenchFailure("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // A little more than asked: the file plugin must not run out before the stream stops reading.
        let wanted = (seconds + 5) * 16_000 * 2
        var written = 0
        try once.withUnsafeBytes { bytes in
            while written < wanted {
                guard write(fd, bytes.baseAddress, bytes.count) == bytes.count else {
                    throw BenchFailure("cannot write \(path): \(String(cString: strerror(errno)))")
                }
                written += bytes.count
            }
        }
        return path
    }

    static func runTool(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchFailure("\(tool) failed (\(process.terminationStatus)); is it installed? run scripts/install-deps.sh")
        }
    }

    static let passage = """
        The morning train left the station a few minutes late, and nobody on the platform seemed surprised. \
        A woman in a green coat checked her watch twice, then opened a paperback about lighthouses along the northern coast. \
        Two students argued quietly about whether the library would open before nine, and a man with a bicycle tried to find \
        a corner where it would not block the doors. Outside the windows the fields were still grey with frost. Every few \
        kilometres a farmhouse appeared, its chimney sending a thin line of smoke into the pale sky. The conductor walked \
        slowly through the carriage, punching tickets and answering the same three questions he answered every day. \
        Halfway through the journey the train stopped between two villages. A voice over the speakers apologised for the \
        delay and explained that a signal ahead had failed. People sighed, made phone calls, and looked out at a heron \
        standing perfectly still in a ditch full of water. After twenty minutes the carriage jerked forward, and the heron \
        lifted itself into the air with long, unhurried beats of its wings.
        """
}

/// A flag set once from the capture thread and read by the benchmark's thread.
final class EndFlag: @unchecked Sendable {
    // @unchecked: `flag` is only touched under `lock`.
    private let lock = NSLock()
    private var flag = false
    var value: Bool { lock.withLock { flag } }
    func set() { lock.withLock { flag = true } }
    /// Sets the flag and returns what it was.
    func swap() -> Bool { lock.withLock { defer { flag = true }; return flag } }
}

/// The benchmark's input has an end; the file plugin cannot say so, so this ends the
/// capture after `frames`.
final class EndingCapture: AudioCapture {
    private let inner: any AudioCapture
    private var remaining: Int
    private let ended: EndFlag

    init(_ inner: any AudioCapture, frames: Int, ended: EndFlag) {
        self.inner = inner
        self.remaining = frames
        self.ended = ended
    }

    var sampleRate: Int { inner.sampleRate }

    func read(into buffer: UnsafeMutableBufferPointer<Int16>) throws(AudioCaptureError) -> CaptureRead {
        guard remaining > 0 else { return .ended }
        let result = try inner.read(into: UnsafeMutableBufferPointer(rebasing: buffer[0 ..< min(buffer.count, remaining)]))
        if case .frames(let count) = result { remaining -= count }
        return result
    }

    func pendingFrames() -> Int { inner.pendingFrames() }

    var settingsDescription: String { inner.settingsDescription }

    func close() {
        inner.close()
        ended.set()
    }
}
