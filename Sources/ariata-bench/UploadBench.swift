import AgentCore
import Capture
import Foundation
import Logging
import Platform
import Rigs
import Synchronization
import Upload

/// Drains a backlog of audio-sized records to the reference receiver on loopback and
/// compares with `curl` posting the same bodies in one run; samples the process's RSS
/// while draining.
///
///     ariata-bench upload [--records 20000] [--audio-bytes 60000] [--batch-max-bytes N] [--no-curl]
enum UploadBench {
    static let token = "bench-token"

    static func run(_ options: BacklogOptions, curl: Bool) throws {
        let directory = NSTemporaryDirectory() + "ariata-upload-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let receiver = try Receiver(directory: directory)
        defer { receiver.stop() }

        // The backlog, written as capture would write it; the same records become the
        // bodies curl posts.
        let database = try AgentDatabase(path: directory + "/queue.sqlite")
        let fill = Date()
        let payloadBytes = try enqueueBacklog(options, database: database, bodiesDirectory: curl ? directory : nil)
        let bodyCount = curl ? (try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("body-") }.count) : 0
        print(String(format: "backlog: %d microphone records, %.1f KB each, %.2f GB of payload (written in %.1f s)",
                     options.records, Double(payloadBytes) / Double(options.records) / 1_000,
                     Double(payloadBytes) / 1e9, Date().timeIntervalSince(fill)))

        // The agent: a forced cycle drains everything, as `ariata-agent sync` would.
        var server = ServerConfig()
        server.endpoint = "http://127.0.0.1:\(receiver.port)"
        server.token = Secret(token)
        server.deviceID = "bench"
        var upload = UploadConfig()
        upload.batchMaxBytes = options.batchMaxBytes
        upload.batchMaxRecords = options.batchMaxRecords
        var logger = Logger(.upload)
        logger.logLevel = .warning
        let uploader = Uploader(server: server, upload: upload, queue: database.recordQueue, logger: logger)

        let sampler = RSSSampler()
        sampler.resetPeak()
        let rssBefore = RSSSampler.resident()
        sampler.start()
        let began = Date()
        var quartiles: [Int: Double] = [:]
        let report = uploader.syncNow { progress in
            let quarter = progress.recordsSent * 4 / max(progress.recordsTotal, 1)
            if quartiles[quarter] == nil { quartiles[quarter] = RSSSampler.resident() }
        }
        let agentSeconds = Date().timeIntervalSince(began)
        sampler.stop()
        let peak = RSSSampler.highWaterMark()
        guard report.drainedAll, report.recordsSent == options.records else {
            throw BenchFailure("the agent did not drain the backlog: \(report)")
        }
        let stats = try receiver.stats()
        let wire = report.streams.values.reduce(Int64(0)) { $0 + $1.wireBytes }
        print(String(format: "agent: %d requests, %.2f GB in %.2f s = %.0f records/s, %.1f MB/s (receiver stored %@ records, %@ duplicates)",
                     report.requests, Double(wire) / 1e9, agentSeconds, Double(options.records) / agentSeconds,
                     Double(wire) / agentSeconds / 1e6, "\(stats.stored)", "\(stats.duplicates)"))
        print(String(format: "agent RSS: %.1f MB before draining, peak %.1f MB while draining (VmHWM reset before the drain); at 0/25/50/75%% of the backlog: %@ MB",
                     rssBefore / 1e6, peak / 1e6,
                     (0..<4).map { quartiles[$0].map { String(format: "%.1f", $0 / 1e6) } ?? "-" }.joined(separator: "/")))
        print(String(format: "agent RSS sampled every 50 ms while draining: min %.1f MB, max %.1f MB",
                     sampler.minimum / 1e6, sampler.maximum / 1e6))

        guard curl else { return }
        try receiver.reset()
        let curlSeconds = try postWithCurl(bodies: bodyCount, directory: directory, port: receiver.port)
        let curlStats = try receiver.stats()
        guard curlStats.stored == options.records else {
            throw BenchFailure("curl's run stored \(curlStats.stored) of \(options.records) records")
        }
        print(String(format: "curl : %d requests of the same bodies in one curl run in %.2f s = %.0f records/s, %.1f MB/s",
                     bodyCount, curlSeconds, Double(options.records) / curlSeconds, Double(wire) / curlSeconds / 1e6))
        print(String(format: "ratio: agent throughput / curl throughput = %.2f (agent takes %.2fx curl's time)",
                     curlSeconds / agentSeconds, agentSeconds / curlSeconds))
    }

    /// Writes the backlog into the queue in transactions of 200, and (when asked) the
    /// bodies the agent will send, cut by the same bounds, as files for curl.
    static func enqueueBacklog(_ options: BacklogOptions, database: AgentDatabase, bodiesDirectory: String?) throws -> Int {
        var noise = Data("OggS".utf8)
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        while noise.count < options.audioBytes {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            noise.append(UInt8(truncatingIfNeeded: state))
        }
        let audio = noise.base64EncodedString()
        let start = Date().addingTimeInterval(-Double(options.records) * 28)
        let budget = IngestBody.payloadBudget(maxBodyBytes: options.batchMaxBytes, maxRecords: options.batchMaxRecords)
        var pending: [NewRecord] = []
        var batch: [QueuedRecord] = []
        var batchBytes = 0
        var bodies = 0
        var total = 0

        func writeBody() throws {
            guard let bodiesDirectory, !batch.isEmpty else { return }
            let id = BatchID.make(stream: .microphone, recordIDs: batch.map(\.id))
            let body = IngestBody.build(stream: .microphone, deviceID: "bench", records: batch, batchID: id, timestamp: Date())
            bodies += 1
            try body.joined.write(to: URL(fileURLWithPath: String(format: "%@/body-%05d.json", bodiesDirectory, bodies)))
            try Data(id.uuidString.lowercased().utf8).write(to: URL(fileURLWithPath: String(format: "%@/id-%05d", bodiesDirectory, bodies)))
            batch.removeAll(keepingCapacity: true)
            batchBytes = 0
        }

        for index in 0..<options.records {
            let end = start.addingTimeInterval(Double(index) * 28)
            // Stored as the microphone stores a chunk: the audio as the record's attachment
            // (a file), the rest in the row. `wire` is the record as the queue reads it back.
            let fields: [String: any Sendable] = [
                "timestamp_start": RFC3339.string(from: end.addingTimeInterval(-30)), "timestamp_end": RFC3339.string(from: end),
                "duration": 30.0, "overlap_duration": 2.0, "audio_format": "ogg",
                "sample_rate": 16_000, "channels": 1, "codec": "opus", "bitrate": 16_000,
            ]
            var record = try NewRecord(stream: .microphone, capturedAt: end, fields: fields)
            record.attachment = RecordAttachment(field: MicrophoneRecord.audioField, data: noise, fileExtension: "ogg")
            var wireFields = fields
            wireFields[MicrophoneRecord.audioField] = audio
            let wire = try NewRecord(id: record.id, stream: .microphone, capturedAt: end, fields: wireFields).payload
            total += wire.count
            pending.append(record)
            if pending.count == 200 {
                try database.recordQueue.enqueue(pending, anchor: nil)
                pending.removeAll(keepingCapacity: true)
            }
            // The queue's rule: add while within the bounds; a batch has at least one record.
            if !batch.isEmpty && (batchBytes + wire.count > budget || batch.count == options.batchMaxRecords) {
                try writeBody()
            }
            batch.append(QueuedRecord(seq: Int64(index), id: record.id, stream: .microphone, capturedAt: end,
                                      payload: wire, status: .pending, uploadAttempts: 0,
                                      lastAttemptAt: nil, lastError: nil))
            batchBytes += wire.count
        }
        try database.recordQueue.enqueue(pending, anchor: nil)
        try writeBody()
        return total
    }

    /// One curl process posting every body over one reused connection, with the
    /// contract's headers; returns its wall time.
    static func postWithCurl(bodies: Int, directory: String, port: Int) throws -> TimeInterval {
        var config = ""
        for index in 1...bodies {
            let id = try String(contentsOfFile: String(format: "%@/id-%05d", directory, index), encoding: .utf8)
            config += """
                url = "http://127.0.0.1:\(port)/ingest"
                header = "Content-Type: application/json"
                header = "X-Device-Token: \(token)"
                header = "Authorization: Bearer \(token)"
                header = "X-Batch-Id: \(id)"
                header = "Expect:"
                data-binary = "@\(String(format: "%@/body-%05d.json", directory, index))"
                output = "/dev/null"
                write-out = "%{http_code}\\n"
                silent
                \(index < bodies ? "next\n" : "")
                """
        }
        let configPath = directory + "/curl.config"
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["--config", configPath]
        let output = Pipe()
        process.standardOutput = output
        let began = Date()
        try process.run()
        let codes = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(began)
        let ok = codes.split(separator: "\n").filter { $0 == "200" }.count
        guard process.terminationStatus == 0, ok == bodies else {
            throw BenchFailure("curl exited \(process.terminationStatus) with \(ok) of \(bodies) answers 200")
        }
        return seconds
    }
}

/// The reference receiver as a child process, storing ids only.
final class Receiver {
    let process = Process()
    let port: Int

    struct Stats: Decodable {
        var records: [String: Int]
        var duplicates: Int
        var stored: Int { records.values.reduce(0, +) }
    }

    init(directory: String) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("tools/ingest-receiver/receiver.py").path
        let portFile = directory + "/receiver.port"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script, "--port", "0", "--port-file", portFile, "--token", UploadBench.token, "--discard-payloads"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        var found: Int?
        while found == nil && Date() < deadline && process.isRunning {
            found = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if found == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        guard let found else { throw BenchFailure("the receiver did not start: is python3 installed? run scripts/install-deps.sh") }
        port = found
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    func stats() throws -> Stats {
        try JSONDecoder().decode(Stats.self, from: control(["-s", "http://127.0.0.1:\(port)/_control/stats"]))
    }

    func reset() throws {
        _ = try control(["-s", "-X", "POST", "-d", "{}", "http://127.0.0.1:\(port)/_control/reset"])
    }

    private func control(_ arguments: [String]) throws -> Data {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = arguments
        let pipe = Pipe()
        curl.standardOutput = pipe
        try curl.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        return data
    }
}

/// Samples this process's resident set every 50 ms on its own thread.
private final class RSSSampler: Sendable {
    private let samples = Mutex<[Double]>([])
    private let thread = Mutex<NamedThread?>(nil)

    /// This process's resident set now (VmRSS), in bytes.
    static func resident() -> Double { Double(ProcStatus.own()?.residentSet?.bytes ?? 0) }
    /// Its high-water mark (VmHWM), in bytes.
    static func highWaterMark() -> Double { Double(ProcStatus.own()?.highWaterMark?.bytes ?? 0) }

    /// Writing 5 to clear_refs resets VmHWM, so the peak covers the drain alone.
    func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    func start() {
        thread.withLock { running in
            running = try? NamedThread(name: "ariata-rss") { [self] waker in
                repeat {
                    let rss = Self.resident()
                    samples.withLock { $0.append(rss) }
                } while waker.wait(for: nil, timeout: 0.05) != .woken
            }
        }
    }

    func stop() { thread.withLock { $0.take() }?.stop() }

    var minimum: Double { samples.withLock { $0.min() ?? 0 } }
    var maximum: Double { samples.withLock { $0.max() ?? 0 } }
}
