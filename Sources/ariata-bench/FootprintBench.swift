import AgentCore
import Capture
import Foundation
import Platform
import Rigs
import Upload

/// The whole daemon's footprint on a small board (docs/performance.md), measured on the real thing:
///
///     scripts/static-build.sh ariata-agent ariata-bench && .build-static/release/ariata-bench footprint [--minutes 10]
///         [--warm-up 0] [--upload-interval 300] [--complexity N] [--health-every 15]
///         [--sync-seconds 30] [--dir D] [--shared-libraries] [--tls]
///
/// `ariata-agent run` with all three streams live against the real rigs (gpsd fed a drive
/// through a socat pty, ALSA capture through the `file` plugin fed speech at real-time pace,
/// a health file that gains a sample every `--health-every` seconds, the reference
/// receiver) and the defaults of a real device (30 s chunks with 2 s overlap, a fix every
/// 10 s, uploads every 300 s, maintenance rounds every 30 s). From 10 s after the start to the
/// end it reads /proc/PID and prints: peak RSS, CPU % of one core and its split by thread,
/// voluntary context switches per second, bytes written to storage (`write_bytes`) per
/// hour and per byte captured (Opus bytes of the chunks plus the other records' bytes), and
/// the CPU the agent's own Opus encoder takes alone on the same audio in the same run.
/// The queue (database, audio journal, attachments) goes in a directory of its own under
/// `--dir` (default: $TMPDIR or /tmp); what the block device under it wrote in the window
/// is printed too (sync at both ends), the file system's journal commits included: the
/// card's own figure, which `write_bytes` does not hold. Point `--dir` at a file system of
/// its own (e.g. a loop-mounted ext4 with a journal, as on a Raspberry Pi's card) so that
/// nothing else writes to that device. The rig's own processes (this one, the receiver,
/// socat, gpsd) run on private copies of the daemon's libraries other than glibc's
/// (`RigLibraries`), so the daemon's resident set is what it would be on a board where no
/// benchmark, receiver or socat maps them; `--shared-libraries` leaves them on the system's
/// files (the daemon's figure then holds pages it could drop on a board). How much of the
/// daemon's file-backed memory another process maps too is printed either way (as root).
/// `--tls`: the receiver serves HTTPS with a self-signed certificate, so uploads pay a real
/// server's TLS (handshake, encryption, CA lookup) in CPU and memory. The agent's `ca_file`
/// is then a directory of the system's CAs and that certificate, indexed by hash as
/// /etc/ssl/certs is, so the daemon finds its CA as it does by default against a server
/// with a public certificate; `--ca-bundle` makes it one PEM file of them all instead
/// (what a `ca_file` bundle costs).
///
///     .build-static/release/ariata-bench footprint drain [--records 20000] [--shared-libraries]
///
/// fills a queue with a backlog of 30 s audio chunks, then runs `ariata-agent sync` to
/// drain it to the receiver and prints that process's peak RSS and its time.
enum FootprintBench {
    static func run(_ options: FootprintCommand) throws {
        let minutes = Double(options.minutes)
        let uploadInterval = options.uploadInterval
        let complexity = options.complexity
        let healthEvery = Double(options.healthEvery)
        let libraries = try options.sharedLibraries ? nil
            : RigLibraries.separate(agent: try BuildProducts.executable("ariata-agent"))
        defer { libraries?.remove() }
        // The queue (database, audio journal, attachments) in a directory of its own under
        // --dir, so the device under it can be measured apart from the rig's own files.
        let queueDirectory = try options.work.workDirectory("footprint")
        defer { try? FileManager.default.removeItem(atPath: queueDirectory) }
        let device = BlockDeviceWrites(directory: queueDirectory)
        let tlsDirectory = try options.tls ? TemporaryDirectory("ariata-footprint-tls") : nil
        let tls = try tlsDirectory.map { try certificateAndTrust(in: $0.path, bundle: options.caBundle) }
        let rig = try DaemonRig(chunkSeconds: options.chunkSeconds, overlapSeconds: 2, uploadInterval: uploadInterval, checkInterval: 30,
                                databasePath: queueDirectory + "/agent.sqlite",
                                storageConfig: "sync_seconds = \(options.syncSeconds)",
                                locationInterval: 10, healthCommitInterval: 300, microphoneConfig: "complexity = \(complexity)",
                                driveSeconds: Int((minutes + Double(options.warmUp)) * 60) + 120,
                                tls: tls?.certificate.pair, caFile: tls?.caFile, box: options.box)
        if options.box {
            // Paired as a person would, before the files are handed to the service user.
            let onboard = try rig.pairWithBox()
            print("paired with the box: " + (onboard.stdout.split(separator: "\n").first { $0.contains("box over iroh") }.map(String.init) ?? "?"))
        }
        let user = try options.serviceUser.map(ServiceUser.init)
        for directory in [rig.directory.path, queueDirectory] + (tlsDirectory.map { [$0.path] } ?? []) { try user?.own(directory) }
        try rig.startAgent(environment: libraries == nil ? [:] : RigLibraries.agentEnvironment, launcher: try user?.launcher() ?? [])
        guard let agent = rig.agent else { throw BenchFailure("the agent did not start") }
        // With a launcher (setpriv), the daemon is the process it execs: the same pid.
        let pid = agent.pid
        print(String(format: "ariata-agent run (pid %d, user %@) for %.1f min: all three streams, %d s chunks, uploads every %d s to %@", pid,
                     (user?.name ?? NSUserName()) as NSString, minutes, options.chunkSeconds, uploadInterval, rig.receiver.endpoint as NSString))

        // The health file gains samples as a watch export would.
        let feeding = EndFlag()
        // Weakly, and not across the sleep: the rig stops its processes (gpsd, socat, the
        // receiver) as it goes, which it must do before this process exits.
        let feeder = Thread { [weak rig] in
            var value = 60
            while !feeding.value {
                if let rig { try? rig.appendHeartRates([value]) } else { break }
                value = 60 + (value - 59) % 40
                Thread.sleep(forTimeInterval: healthEvery)
            }
        }
        feeder.start()
        defer { feeding.set() }

        // Start-up (onboarding checks, journal recovery) left out, and --warm-up minutes more:
        // a new queue's WAL grows to its size (1 MiB) in its first quarter of an hour, and
        // while it grows each commit's fsync is also a commit of the file system's journal.
        // The start-up's resident set, sampled every 10 ms: it rises and falls within a second
        // as the start's stages drop their pages (docs/decisions/0005-start-up-page-drop.md),
        // between the window's samples and without always raising VmHWM.
        var startUp = MemoryPeak()
        let startUpEnd = Date().addingTimeInterval(10)
        while Date() < startUpEnd {
            if let sample = ResidentMemory(pid: pid) { startUp.add(sample) }
            Thread.sleep(forTimeInterval: 0.01)
        }
        Thread.sleep(forTimeInterval: Double(options.warmUp) * 60)
        let deviceFirst = device?.bytesWritten()
        guard let first = ProcessReading(pid: pid) else { throw BenchFailure("the agent exited early:\n\(rig.agentLog)") }
        var threads = ThreadLedger()
        threads.add(first)
        let windowStart = Date()
        let end = windowStart.addingTimeInterval(minutes * 60)
        var last = first
        // The first minutes' peak counts the start-up's; after a warm-up, the steady state's is its own.
        var memory = options.warmUp == 0 ? startUp : MemoryPeak()
        memory.add(first.memory)
        // A box's upload cycles run the iroh bridge as the daemon's child: the daemon's
        // memory while one runs and between them, and the bridges' own.
        var cycles = BridgeCycles()
        var nextReading = Date().addingTimeInterval(1)
        while Date() < end {
            // Memory every 0.1 s (an upload's rise lasts well under a second), the rest each second.
            Thread.sleep(forTimeInterval: 0.1)
            if let sample = ResidentMemory(pid: pid) {
                memory.add(sample)
                if options.box { cycles.add(daemon: sample, bridges: BridgeCycles.bridges(of: pid)) }
            }
            guard Date() >= nextReading else { continue }
            nextReading = nextReading.addingTimeInterval(1)
            guard let reading = ProcessReading(pid: pid) else { throw BenchFailure("the agent exited:\n\(rig.agentLog)") }
            threads.add(reading)
            last = reading
            memory.add(reading.memory)
        }
        let deviceLast = device?.bytesWritten()
        let window = Date().timeIntervalSince(windowStart)
        let audioRequests = (try? rig.receiver.requests(stream: .microphone)) ?? []
        try libraries?.checkAgent(pid: pid)
        let shared = SharedPages(pid: pid)
        _ = rig.stopAgent()
        feeding.set()

        // What was captured in the window, read back from the queue.
        let database = try AgentDatabase(readOnlyPath: rig.databasePath)
        var captured = (opus: 0, records: 0, audioSeconds: 0.0, chunks: 0, fixes: 0, samples: 0)
        for stream in StreamName.allCases {
            for record in try database.recordQueue.records(stream: stream) where record.capturedAt >= windowStart && record.capturedAt < end {
                switch stream {
                case .microphone:
                    let object = try JSONSerialization.jsonObject(with: record.payload) as? [String: Any]
                    captured.opus += Data(base64Encoded: object?["audio_data"] as? String ?? "")?.count ?? 0
                    captured.audioSeconds += object?["duration"] as? Double ?? 0
                    captured.chunks += 1
                case .location:
                    captured.records += record.payload.count
                    captured.fixes += 1
                case .health:
                    captured.records += record.payload.count
                    captured.samples += 1
                }
            }
        }
        // Uploads that the receiver acknowledged (kept `retention_days`): a run whose uploads
        // failed (a TLS set-up gone wrong, say) would measure a daemon that never sent.
        let acknowledged = try StreamName.allCases.reduce(0) { $0 + (try database.recordQueue.count(stream: $1, status: .uploaded)) }
        let pending = try StreamName.allCases.reduce(0) { $0 + (try database.recordQueue.count(stream: $1, status: .pending)) }
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        let cpu = Double(last.cpuTicks - first.cpuTicks) / hz
        let written = last.writeBytes - first.writeBytes
        let capturedBytes = captured.opus + captured.records
        let switches = threads.voluntarySwitches
        print(String(format: "window %.0f s: %d audio chunks (%.0f s of audio, %d Opus bytes), %d fixes, %d health samples (%d record bytes)",
                     window, captured.chunks, captured.audioSeconds, captured.opus, captured.fixes, captured.samples, captured.records))
        print("records the receiver acknowledged: \(acknowledged) (\(pending) pending at the end)")
        printAudioDelivery(audioRequests, database: database)
        if acknowledged == 0, window > Double(uploadInterval) + 20 {
            print("  WARNING: no upload succeeded: the figures are those of a daemon that never sent. The agent's log ends:")
            for line in rig.agentLog.split(separator: "\n").suffix(5) { print("  " + line) }
        }
        print(String(format: "start-up (first 10 s, sampled every 10 ms): peak RSS %.1f MB (MiB), anonymous at most %.1f MB, file-backed at most %.1f MB%@",
                     startUp.peakMiB, Double(startUp.anonKiB) / 1024, Double(startUp.fileKiB) / 1024,
                     (options.warmUp == 0 ? "" : " (not in the window's peak: after --warm-up)") as NSString))
        print(String(format: "peak RSS %.1f MB (MiB: the larger of VmHWM, %.1f, and VmRSS sampled every 0.1 s or, at the start, 10 ms, %.1f; %.1f resident at the end); anonymous (private) at most %.1f MB, file-backed (code, libraries) at most %.1f MB",
                     memory.peakMiB, Double(memory.highWaterKiB) / 1024, Double(memory.sampledKiB) / 1024,
                     Double(last.memory.rssKiB) / 1024, Double(memory.anonKiB) / 1024, Double(memory.fileKiB) / 1024))
        print("  file-backed pages at the end that another process maps too: " + (shared?.summary() ?? "not measured (needs root)"))
        print(String(format: "CPU %.2f %% of one core (%.2f s)", 100 * cpu / window, cpu))
        print(String(format: "voluntary context switches %.2f/s (%d over the window, all threads)", Double(switches) / window, switches))
        print(String(format: "written to storage %.1f MB/h; %.2f bytes per byte captured (%d written, %d captured)",
                     Double(written) / window * 3600 / 1e6, capturedBytes > 0 ? Double(written) / Double(capturedBytes) : 0,
                     written, capturedBytes))
        if let device, let deviceFirst, let deviceLast {
            let deviceBytes = deviceLast - deviceFirst
            print(String(format: "the device under the queue (%@) wrote %.1f MB/h; %.2f bytes per byte captured (%d bytes: the file system's journal and metadata included, and any other writer on %@)",
                         device.name, Double(deviceBytes) / window * 3600 / 1e6,
                         capturedBytes > 0 ? Double(deviceBytes) / Double(capturedBytes) : 0, deviceBytes, device.name))
        } else {
            print("no block device under \(queueDirectory) (tmpfs?): the device's writes are not measured")
        }
        for line in threads.split(hz: hz, window: window) { print("  " + line) }
        if options.box {
            let requests = (try? rig.receiver.requests()) ?? []
            for line in cycles.summary(requests: requests, childTicks: last.childTicks - first.childTicks, hz: hz) { print(line) }
        }

        // The agent's own encoder alone on the same audio (the chunks' seconds, overlaps
        // included), same settings, in this process.
        let encoderCPU = try encoderAlone(seconds: captured.audioSeconds, complexity: complexity,
                                          in: rig.directory.path)
        print(String(format: "Opus encoder alone on the same %.0f s of audio: %.2f s CPU (%.2f %% of one core over the window); daemon/encoder %.3f",
                     captured.audioSeconds, encoderCPU, 100 * encoderCPU / window, encoderCPU > 0 ? cpu / encoderCPU : 0))
        // The same in the blocks the capture thread hands the encoder (one wake's worth).
        let wakeBlocksCPU = try encoderAlone(seconds: captured.audioSeconds, complexity: complexity,
                                             block: ALSACapture.defaultWakeFrames, in: rig.directory.path)
        print(String(format: "  the same in %d-frame blocks, as the capture thread hands them over: %.2f s CPU; daemon/encoder %.3f",
                     ALSACapture.defaultWakeFrames, wakeBlocksCPU, wakeBlocksCPU > 0 ? cpu / wakeBlocksCPU : 0))
    }

    /// The receiver's certificate and the agent's `ca_file`: the system's CAs with the
    /// certificate added, so the daemon has as many CAs to look through as against a server
    /// with a public certificate: a directory by hash, as the daemon uses /etc/ssl/certs
    /// without `ca_file` (`CATrust`), or with `bundle` one PEM file of them all.
    static func certificateAndTrust(in directory: String, bundle: Bool) throws -> (certificate: SelfSignedCertificate, caFile: String) {
        let certificate = try SelfSignedCertificate(in: directory)
        guard bundle else {
            let trust = (directory as NSString).appendingPathComponent("trusted")
            try certificate.makeTrustDirectory(trust, systemCAs: true)
            let names = try FileManager.default.contentsOfDirectory(atPath: trust).filter(CATrust.isHashedName)
            print("TLS: the agent's ca_file is a directory of \(names.count) certificates by hash: the system's CAs and the receiver's")
            return (certificate, trust)
        }
        let caFile = (directory as NSString).appendingPathComponent("bundle.pem")
        let system = (try? Data(contentsOf: URL(fileURLWithPath: "/etc/ssl/certs/ca-certificates.crt"))) ?? Data()
        try (system + Data(contentsOf: URL(fileURLWithPath: certificate.certificate))).write(to: URL(fileURLWithPath: caFile))
        print("TLS: the agent's ca_file is one PEM file of the system's \(String(decoding: system, as: UTF8.self).components(separatedBy: "BEGIN CERTIFICATE").count - 1) CAs and the receiver's certificate")
        return (certificate, caFile)
    }

    /// What each audio upload request carried, and how long each chunk's audio waited
    /// between its first sample and the server's answer (the whole run, start-up included).
    static func printAudioDelivery(_ requests: [ReceiverRig.Request], database: AgentDatabase) {
        // A box's answer has no counts: its 200 is the acknowledgement.
        let delivered = requests.filter { $0.status == 200 && ($0.accepted ?? $0.records) > 0 }
        guard let largest = delivered.map(\.wire_bytes).max() else {
            print("audio requests: none delivered")
            return
        }
        print("audio requests: \(delivered.count) delivered, \(delivered.map(\.records).reduce(0, +)) chunks; largest body \(largest) bytes, "
              + "chunks per request at most \(delivered.map(\.records).max() ?? 0)")
        let chunks = (try? database.recordQueue.records(stream: .microphone)) ?? []
        let started = Dictionary(chunks.map { ($0.id.uuidString.lowercased(), $0.capturedAt) }, uniquingKeysWith: { a, _ in a })
        var waits: [Double] = []
        for request in delivered {
            for case let id? in request.record_ids {
                if let start = started[id.lowercased()] { waits.append(request.at - start.timeIntervalSince1970) }
            }
        }
        guard let longest = waits.max(), let shortest = waits.min() else { return }
        print(String(format: "audio wait from a chunk's first sample to its delivery: %.0f–%.0f s (%d chunks)", shortest, longest, waits.count))
    }

    /// CPU seconds of `OggOpusChunkEncoder` encoding `seconds` of the rig's speech in 30 s
    /// files, handed over in `block` frames, on this thread.
    static func encoderAlone(seconds: Double, complexity: Int, block: Int = 8_000, in directory: String) throws -> Double {
        let samples = try SpeechInput.samples(ofRawFile: try SpeechInput.make(seconds: 60, in: directory, name: "alone.raw"))
        guard !samples.isEmpty else { return 0 }
        let total = Int(seconds * 16_000)
        let before = threadCPU()
        var done = 0
        while done < total {
            let encoder = try OggOpusChunkEncoder(.init(sampleRate: 16_000, bitrate: 16_000, complexity: complexity))
            let chunkEnd = min(total, done + 30 * 16_000)
            while done < chunkEnd {
                let offset = done % samples.count
                let count = min(block, chunkEnd - done, samples.count - offset)
                try samples.withUnsafeBufferPointer { buffer in
                    try encoder.append(UnsafeBufferPointer(rebasing: buffer[offset ..< offset + count]))
                }
                done += count
            }
            _ = try encoder.finish()
        }
        return threadCPU() - before
    }

    static func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// One look at /proc/PID: the process's CPU ticks, bytes written to storage, memory, and
/// each thread's name, CPU ticks and voluntary context switches.
struct ProcessReading {
    struct Task { var name: String; var ticks: Int; var voluntary: Int }
    var cpuTicks: Int
    /// cutime + cstime: the CPU of the children it waited for (a box's iroh bridges).
    var childTicks: Int
    var writeBytes: Int
    var memory: ResidentMemory
    var tasks: [Int: Task]

    init?(pid: Int32) {
        guard let stat = Self.statFields("/proc/\(pid)/stat"),
              let io = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8),
              let status = ProcStatus(pid: pid) else { return nil }
        cpuTicks = stat.ticks
        childTicks = Self.childTicks("/proc/\(pid)/stat") ?? 0
        // /proc/PID/io: "write_bytes: N", in bytes.
        writeBytes = io.split(separator: "\n").first { $0.hasPrefix("write_bytes:") }
            .flatMap { Int($0.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        memory = ResidentMemory(status)
        tasks = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            guard let tid = Int(name), let taskStat = Self.statFields("/proc/\(pid)/task/\(tid)/stat"),
                  let taskStatus = ProcStatus(path: "/proc/\(pid)/task/\(tid)/status") else { continue }
            tasks[tid] = Task(name: taskStat.comm, ticks: taskStat.ticks, voluntary: taskStatus.voluntaryContextSwitches ?? 0)
        }
    }

    /// cutime + cstime (fields 16 and 17) from a stat file.
    static func childTicks(_ path: String) -> Int? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the name, fields count from 3: cutime is the 14th of them (16 - 2), cstime the 15th.
        guard fields.count > 14, let user = Int(fields[13]), let system = Int(fields[14]) else { return nil }
        return user + system
    }

    /// comm and utime+stime from a stat file (the name may hold spaces and parentheses).
    static func statFields(_ path: String) -> (comm: String, ticks: Int)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") else { return nil }
        let comm = String(text[text.index(after: open) ..< close])
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the name: state is field 3, utime 14 and stime 15 (1-based over the whole line).
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return (comm, user + system)
    }

}

/// Per-thread counters across readings: a thread that ends between two readings keeps what
/// it had at the last one (so short-lived threads are counted, up to a second short).
struct ThreadLedger {
    private var first: [Int: ProcessReading.Task] = [:]
    private var last: [Int: ProcessReading.Task] = [:]

    mutating func add(_ reading: ProcessReading) {
        let initial = last.isEmpty
        for (tid, task) in reading.tasks {
            if first[tid] == nil {
                // A thread born after the window began counts from zero.
                first[tid] = initial ? task : ProcessReading.Task(name: task.name, ticks: 0, voluntary: 0)
            }
            last[tid] = task
        }
    }

    var voluntarySwitches: Int {
        last.reduce(0) { sum, entry in sum + entry.value.voluntary - (first[entry.key]?.voluntary ?? 0) }
    }

    /// CPU % and switches per second by thread name, busiest first.
    func split(hz: Double, window: Double) -> [String] {
        var byName: [String: (ticks: Int, voluntary: Int, threads: Int)] = [:]
        for (tid, task) in last {
            let start = first[tid] ?? task
            byName[task.name, default: (0, 0, 0)].ticks += task.ticks - start.ticks
            byName[task.name, default: (0, 0, 0)].voluntary += task.voluntary - start.voluntary
            byName[task.name, default: (0, 0, 0)].threads += 1
        }
        return byName.sorted { $0.value.ticks > $1.value.ticks }.map { name, value in
            String(format: "thread %-16@ ×%-3d CPU %5.2f %%  switches %5.2f/s", name as NSString, value.threads,
                   100 * Double(value.ticks) / hz / window, Double(value.voluntary) / window)
        }
    }
}

extension FootprintBench {
    /// `ariata-bench footprint drain [--records 20000]`: the peak RSS of `ariata-agent sync`
    /// draining a backlog of audio chunks (60 KB of Opus-sized noise each) to the reference
    /// receiver on loopback.
    enum Drain {
        static func run(_ options: BacklogOptions, sharedLibraries: Bool) throws {
            let libraries = sharedLibraries ? nil
                : try RigLibraries.separate(agent: try BuildProducts.executable("ariata-agent"))
            defer { libraries?.remove() }
            let directory = try TemporaryDirectory("ariata-drain-bench")
            let receiver = try Receiver(directory: directory.path)
            defer { receiver.stop() }
            let database = directory.file("queue.sqlite")
            let fill = Date()
            let payload = try UploadBench.enqueueBacklog(options, database: try AgentDatabase(path: database), bodiesDirectory: nil)
            print(String(format: "backlog: %d audio chunks, %.2f GB of payload (written in %.1f s)",
                         options.records, Double(payload) / 1e9, Date().timeIntervalSince(fill)))
            let config = directory.file("agent.toml")
            try """
                [server]
                endpoint = "http://127.0.0.1:\(receiver.port)"
                token = "\(UploadBench.token)"
                device_id = "bench"
                [storage]
                database = "\(database)"

                """.write(toFile: config, atomically: true, encoding: .utf8)
            let sync = try ChildProcess(try BuildProducts.executable("ariata-agent"), ["sync", "--config", config],
                                        name: "sync", logDirectory: directory.path,
                                        environment: libraries == nil ? nil : RigLibraries.agentEnvironment)
            let began = Date()
            var peak = MemoryPeak()
            var samples: [Int] = []
            var shared: SharedPages?
            while sync.isRunning {
                if let reading = ProcessReading(pid: sync.pid) {
                    peak.add(reading.memory)
                    samples.append(reading.memory.rssKiB)
                }
                // Halfway through a drain at about 230 records/s.
                if shared == nil, Date().timeIntervalSince(began) > Double(options.records) / 460 {
                    try libraries?.checkAgent(pid: sync.pid)
                    shared = SharedPages(pid: sync.pid)
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            let seconds = Date().timeIntervalSince(began)
            let status = sync.wait(timeout: 10)
            let stats = try receiver.stats()
            guard status == 0, stats.stored == options.records else {
                throw BenchFailure("sync exited \(status.map(String.init) ?? "?") with \(stats.stored) of \(options.records) stored:\n\(sync.stderr())")
            }
            print(String(format: "ariata-agent sync drained %d records in %.1f s (%.0f records/s); peak RSS %.1f MB (MiB: the larger of VmHWM and VmRSS sampled every 0.05 s), resident %.1f–%.1f MB while draining",
                         options.records, seconds, Double(options.records) / seconds, peak.peakMiB,
                         Double(samples.min() ?? 0) / 1024, Double(samples.max() ?? 0) / 1024))
            print("  file-backed pages halfway that another process maps too: " + (shared?.summary() ?? "not measured (needs root)"))
        }
    }
}

/// The resident-memory fields of /proc/PID/status (`ProcStatus`), in KiB.
struct ResidentMemory {
    /// VmHWM: the kernel's high-water mark. The kernel raises it only when pages leave the
    /// process through an unmap or a zap (`free`, `malloc_trim`), so a rise that ends
    /// otherwise (a page drop, reclaim) can miss it: `MemoryPeak` takes VmRSS samples too.
    var highWaterKiB: Int
    var rssKiB: Int
    /// Private memory (heap, stacks, relocated data) and file-backed pages (the program's
    /// code and the libraries', shared with the page cache).
    var anonKiB: Int
    var fileKiB: Int

    init(_ status: ProcStatus) {
        highWaterKiB = status.highWaterMark?.value ?? 0
        rssKiB = status.residentSet?.value ?? 0
        anonKiB = status.residentAnonymous?.value ?? 0
        fileKiB = status.residentFile?.value ?? 0
    }

    init?(pid: Int32) {
        guard let status = ProcStatus(pid: pid) else { return nil }
        self.init(status)
    }
}

/// The peak of a process's resident memory over samples: the larger of its VmHWM and the
/// largest VmRSS sampled (either alone can miss a peak), and the largest anonymous and
/// file-backed parts.
struct MemoryPeak {
    private(set) var highWaterKiB = 0
    private(set) var sampledKiB = 0
    private(set) var anonKiB = 0
    private(set) var fileKiB = 0

    init() {}
    init(_ first: ResidentMemory) { add(first) }

    mutating func add(_ sample: ResidentMemory) {
        highWaterKiB = max(highWaterKiB, sample.highWaterKiB)
        sampledKiB = max(sampledKiB, sample.rssKiB)
        anonKiB = max(anonKiB, sample.anonKiB)
        fileKiB = max(fileKiB, sample.fileKiB)
    }

    var peakKiB: Int { max(highWaterKiB, sampledKiB) }
    var peakMiB: Double { Double(peakKiB) / 1024 }
}

/// A Virtues box's upload cycles, seen from outside: while an iroh bridge (the daemon's
/// child) runs, a cycle is on. The daemon's peak resident set during cycles and between
/// them, the bridges' own peak, how many cycles, and what each request carried.
struct BridgeCycles {
    private(set) var during = MemoryPeak()
    private(set) var between = MemoryPeak()
    private(set) var bridge = MemoryPeak()
    private var seen: Set<Int32> = []

    /// The daemon's children that are bridges, with their memory now.
    static func bridges(of pid: Int32) -> [(pid: Int32, memory: ResidentMemory)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var found: [(Int32, ResidentMemory)] = []
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8) else { continue }
            for child in text.split(separator: " ").compactMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
                guard let comm = try? String(contentsOfFile: "/proc/\(child)/comm", encoding: .utf8),
                      comm.hasPrefix("ariata-iroh"), let memory = ResidentMemory(pid: child) else { continue }
                found.append((child, memory))
            }
        }
        return found
    }

    /// When a bridge was last seen: a cycle's bookkeeping goes on a moment after it ends.
    private var lastBridgeAt = Date.distantPast
    /// Seconds after the last bridge that still count as the cycle's.
    static let cycleTail: TimeInterval = 10

    mutating func add(daemon: ResidentMemory, bridges: [(pid: Int32, memory: ResidentMemory)]) {
        let now = Date()
        if !bridges.isEmpty { lastBridgeAt = now }
        if now.timeIntervalSince(lastBridgeAt) > Self.cycleTail {
            between.add(daemon)
        } else {
            during.add(daemon)
        }
        for (pid, memory) in bridges {
            seen.insert(pid)
            bridge.add(memory)
        }
    }

    func summary(requests: [ReceiverRig.Request], childTicks: Int, hz: Double) -> [String] {
        let answered = requests.filter { $0.status == 200 }
        let bytes = answered.map(\.wire_bytes)
        let cpu = Double(childTicks) / hz
        var lines = [String(format: "box: %d upload cycles seen (a bridge each); the daemon's peak RSS %.1f MB between cycles (VmRSS sampled more than %.0f s after a bridge), %.1f MB during them (VmHWM: %.1f)",
                            seen.count, Double(between.sampledKiB) / 1024, Self.cycleTail, during.peakMiB, Double(during.highWaterKiB) / 1024)]
        lines.append(String(format: "  the bridge's peak RSS %.1f MB (anonymous at most %.1f MB, file-backed %.1f MB); its CPU %.2f s in all, %.3f s per cycle",
                            bridge.peakMiB, Double(bridge.anonKiB) / 1024, Double(bridge.fileKiB) / 1024, cpu,
                            seen.isEmpty ? 0 : cpu / Double(seen.count)))
        if !bytes.isEmpty {
            lines.append(String(format: "  %d requests answered 200: %.0f bytes each on average (largest %d)",
                                bytes.count, Double(bytes.reduce(0, +)) / Double(bytes.count), bytes.max() ?? 0))
        }
        return lines
    }
}
