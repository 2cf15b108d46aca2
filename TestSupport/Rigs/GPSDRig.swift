import Foundation

/// A real gpsd on a free, non-default port, reading a pty whose other end the test
/// writes NMEA into:
///
///     test ──▶ <feed> ══ socat pty pair ══ <device> ──▶ gpsd -S <port> ──▶ client
///
/// gpsd can be killed and started again on the same port and device while the pty pair
/// (and so the feed) stays up.
public final class GPSDRig: @unchecked Sendable {
    // Mutable state (the gpsd process) is touched only from the test's own thread.
    public private(set) var port: Int
    public let devicePath: String
    public let feedPath: String
    private let directory: TemporaryDirectory
    private let controlSocket: String
    private let socat: ChildProcess
    private var gpsd: ChildProcess?
    private let feed: FileHandle
    private let feedLock = NSLock()

    /// Starts the pty pair, and gpsd unless `startGPSD` is false (the test starts it later).
    public init(startGPSD: Bool = true) throws {
        directory = try TemporaryDirectory("ariata-gpsd")
        port = try FreePort.find()
        let devicePath = directory.file("gps-device")
        let feedPath = directory.file("gps-feed")
        self.devicePath = devicePath
        self.feedPath = feedPath
        controlSocket = directory.file("gpsd.sock")
        _ = try ChildProcess.locate("gpsd")
        socat = try ChildProcess("socat", [
            "-d", "-d",
            "pty,raw,echo=0,link=\(devicePath)",
            "pty,raw,echo=0,link=\(feedPath)",
        ], logDirectory: directory.path)
        try waitUntil("socat to create the pty pair", timeout: 10) {
            FileManager.default.fileExists(atPath: devicePath) && FileManager.default.fileExists(atPath: feedPath)
        }
        guard let handle = FileHandle(forWritingAtPath: feedPath) else {
            throw RigFailure("cannot open the pty feed \(feedPath): \(socat.stderr())")
        }
        feed = handle
        if startGPSD { try startOnAFreePort() }
    }

    /// The first start: a port found free can be taken by another test's server before
    /// gpsd binds it (the suite runs many at once), so a lost race tries another port.
    private func startOnAFreePort() throws {
        for _ in 1 ..< 3 {
            do {
                return try startGPSD()
            } catch let failure as RigFailure where failure.description.contains("Address already in use") {
                gpsd = nil
                port = try FreePort.find()
            }
        }
        try startGPSD()
    }

    deinit {
        gpsd?.stop(grace: 2)
        try? feed.close()
        socat.stop(grace: 2)
    }

    public var gpsdIsRunning: Bool { gpsd?.isRunning ?? false }

    public var gpsdPID: Int32? { gpsd?.pid }

    /// Starts gpsd on the rig's port and waits until it accepts connections.
    public func startGPSD() throws {
        guard !gpsdIsRunning else { return }
        // -N foreground, -n open the device without waiting for a client, -b never write
        // to the device (no probing), -F a control socket of our own (not /run).
        let process = try ChildProcess("gpsd", ["-N", "-n", "-b", "-S", String(port), "-F", controlSocket, devicePath],
                                       logDirectory: directory.path)
        gpsd = process
        try waitUntil("gpsd to listen on 127.0.0.1:\(port)", timeout: 15) {
            guard process.isRunning else {
                throw RigFailure("gpsd exited at start: \(process.stderr())")
            }
            return Self.accepts(port: port)
        }
    }

    /// SIGKILL, the way a crash looks to the client; waits until the process is gone.
    public func killGPSD() {
        guard let process = gpsd else { return }
        process.signal(SIGKILL)
        process.wait(timeout: 10)
        gpsd = nil
    }

    public var gpsdLog: String { gpsd?.stderr() ?? "" }

    /// Writes NMEA text to the device gpsd reads.
    public func write(_ text: String) throws {
        try feedLock.withLock {
            try feed.write(contentsOf: Data(text.utf8))
        }
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// Writes a drive into a rig on its own thread, one epoch per `period` seconds of wall
/// time (faster than real time is fine: gpsd goes by the sentences' own times).
public final class NMEAFeeder: @unchecked Sendable {
    // `started`, `stopped` and `written` are guarded by `lock`; the rest is immutable.
    private let rig: GPSDRig
    private let epochs: [DriveEpoch]
    private let period: TimeInterval
    private let lock = NSLock()
    private var started = false
    private var stopped = false
    private var written = 0
    private let finished = DispatchSemaphore(value: 0)

    public init(rig: GPSDRig, epochs: [DriveEpoch], period: TimeInterval) {
        self.rig = rig
        self.epochs = epochs
        self.period = period
    }

    public func start() {
        guard lock.withLock({ () -> Bool in defer { started = true }; return !started }) else { return }
        let thread = Thread { [self] in
            defer { finished.signal() }
            var next = Date()
            for epoch in epochs {
                if lock.withLock({ stopped }) { return }
                // A write error means the rig is being torn down; the test sees the
                // missing records.
                guard (try? rig.write(NMEADrive.sentences(for: epoch))) != nil else { return }
                lock.withLock { written += 1 }
                next = next.addingTimeInterval(period)
                let pause = next.timeIntervalSinceNow
                if pause > 0 { Thread.sleep(forTimeInterval: pause) }
            }
        }
        thread.name = "nmea-feeder"
        thread.start()
    }

    /// Epochs written so far.
    public var epochsWritten: Int { lock.withLock { written } }

    /// Waits until the whole drive is written.
    public func waitUntilDone(timeout: TimeInterval) -> Bool {
        finished.wait(timeout: .now() + timeout) == .success
    }

    public func stop() {
        let wasStarted = lock.withLock { () -> Bool in stopped = true; return started }
        guard wasStarted else { return }
        _ = finished.wait(timeout: .now() + 5)
    }
}

public struct RigFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
