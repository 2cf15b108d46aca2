import AgentCore
import Foundation
import Logging
import Platform

/// Reads samples a device sends line by line over a serial port (JSON Lines, CSV or
/// `key=value`). A serial line is a stream, not a file: there is nothing to anchor and
/// nothing to read again, so samples are committed within `commitDelay` (1 s) of
/// arriving rather than at the stream's commit interval (a crash loses at most that), and
/// held while the queue refuses them. When the device goes away (USB unplugged) the source
/// turns unhealthy and opens the port again by itself when the device returns.
public final class SerialSource: HealthSource, @unchecked Sendable {
    // @unchecked: `counters` (a Mutex) is shared with other threads; every var is touched
    // only by the thread inside run().
    public let name: String
    let config: SerialSourceSettings
    let clock: any WallClock
    let logger: Logger

    private let counters: HealthSourceCounters
    /// Samples held while the queue refuses writes; beyond this the oldest are dropped.
    private static let maxHeld = 50_000

    private var processor: HealthLineProcessor
    private var committer: HealthCommitter
    private var port: SerialPort?
    private var buffer = LineBuffer()
    private var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    private var lineNumber: Int64 = 0
    private var lastOpenError: SerialPort.OpenError?

    public init(config: SerialSourceSettings, serverMetrics: Set<String>? = nil, queue: any RecordSink, commitDelay: TimeInterval = 1,
                batchSize: Int = 500, clock: any WallClock = SystemClock(),
                clockTrust: ClockTrust = .live(trustSystemClock: false), logger: Logger) {
        name = config.name
        self.config = config
        self.clock = clock
        self.logger = logger
        let counters = HealthSourceCounters(name: config.name, kind: .serial)
        self.counters = counters
        processor = HealthLineProcessor(format: config.format, sourceName: config.name, counters: counters, logger: logger,
                                        clockTrust: clockTrust, serverMetrics: serverMetrics)
        committer = HealthCommitter(queue: queue, interval: commitDelay, batchSize: batchSize, holdAtMost: Self.maxHeld,
                                    path: config.path, sourceName: config.name, counters: counters, logger: logger)
    }

    public func status() -> HealthSourceStatus { counters.snapshot() }

    public func run(until stop: Waker) {
        // Watching the device's directory lets a replugged device be opened as soon as
        // udev creates it; the 1 s retry covers nodes that appear without an event.
        let inotify = try? Inotify()
        let directory = (config.path as NSString).deletingLastPathComponent
        _ = inotify?.add(directory.isEmpty ? "." : directory, mask: UInt32(IN_CREATE | IN_ATTRIB | IN_MOVED_TO))
        while !stop.isWoken {
            if port == nil { openPort() }
            var fds = [stop.fd]
            if let port { fds.append(port.fd) } else if let inotify { fds.append(inotify.fd) }
            var timeout: TimeInterval? = port == nil ? HealthSourceTuning.serialReopen.delay(afterFailures: 1) : nil
            if let due = committer.dueAt {
                let wait = max(0, due - Monotonic.now)
                timeout = min(timeout ?? wait, wait)
            }
            let revents = Poll.wait(fds, timeout: timeout) ?? []
            counters.update { $0.wakeups += 1 }
            _ = inotify?.drain()
            if port != nil, revents.count > 1, revents[1] != 0 { readPort(hungUp: revents[1] & Int16(POLLHUP | POLLERR | POLLNVAL) != 0) }
            if committer.isDue { commit() }
        }
        commit()
        closePort()
    }

    private func openPort() {
        switch SerialPort.open(config.path, baud: config.baud) {
        case .success(let opened):
            port = opened
            lastOpenError = nil
            lineNumber = 0
            buffer.reset()
            counters.update { $0.liveness = .healthy }
            logger.info("health source \(name): reading \(config.path) at \(config.baud) baud")
        case .failure(let error):
            let health: Liveness
            switch error {
            case .permissionDenied:
                health = .unhealthy(reason: "cannot open \(config.path): permission denied: add the service user to the dialout group (sudo usermod -aG dialout <user>) and restart the agent",
                                    code: .permissionDenied)
            case .missing:
                health = .unhealthy(reason: "serial device \(config.path) is not there (unplugged?); it is opened again when it returns")
            case .unsupportedBaud(let baud):
                health = .unhealthy(reason: "baud \(baud) is not a standard rate: use one of \(SerialPort.speeds.keys.sorted().map(String.init).joined(separator: ", "))")
            case .other(let message):
                health = .unhealthy(reason: "cannot open \(config.path): \(message)")
            }
            counters.update { $0.liveness = health }
            if error != lastOpenError {
                lastOpenError = error
                if case .permissionDenied = error {
                    logger.error("\(AgentErrorCode.permissionDenied.rawValue) \(health.reason ?? "")")
                } else {
                    logger.warning("health source \(name): \(health.reason ?? "")")
                }
            }
        }
    }

    private func closePort() {
        port?.close()
        port = nil
    }

    private func readPort(hungUp: Bool) {
        guard let port else { return }
        while true {
            let n = chunk.withUnsafeMutableBytes { read(port.fd, $0.baseAddress, $0.count) }
            if n > 0 {
                chunk.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                drainLines()
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN && !hungUp { return }
            // EOF, EIO (the other end of a pty closed, a USB adapter unplugged) or a hang-up.
            let dropped = buffer.pendingBytes
            commit()
            closePort()
            counters.update {
                $0.liveness = .unhealthy(reason: "serial device \(config.path) went away (unplugged?); it is opened again when it returns")
            }
            logger.warning("health source \(name): \(config.path) went away\(dropped > 0 ? "; an unfinished line of \(dropped) bytes was dropped" : "")")
            return
        }
    }

    private func drainLines() {
        while let line = buffer.next() {
            lineNumber += 1
            switch line {
            case .overlong(_, let first):
                if first { processor.overlong(place: "\(config.path):\(lineNumber)") } else { lineNumber -= 1 }
            case .text(let text, _):
                processor.process(text, place: "\(config.path):\(lineNumber)", now: clock.now(), into: &committer.pending)
            }
            committer.lineRead(movesAnchor: false)
            if committer.isFull(backlog: false) { commit() }
        }
    }

    private func commit() {
        _ = committer.commit { nil }
    }
}
