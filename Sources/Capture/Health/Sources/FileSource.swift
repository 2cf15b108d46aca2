import AgentCore
import Foundation
import Logging
import Synchronization

/// Follows a file another program appends samples to, like `tail -F`, exactly once:
/// the anchor (device, inode, byte offset after the last complete line consumed, line
/// number, fingerprint, CSV header) is written in the same transaction as the records
/// those lines produced. Until a commit, the file itself is the buffer: a crash loses
/// only the uncommitted position, and the lines are read again after the restart.
///
/// Rotation: by rename (the old file is read to its end through the open descriptor
/// before the new one is opened from its start) and by copytruncate (a size below the
/// read offset, or first bytes that no longer match, start the file over; lines the
/// source had not read yet are recovered from the copy when a sibling file starts with
/// the same bytes).
///
/// The thread sleeps in poll(2) on inotify and a wake pipe, without a time-out unless a
/// commit is due or an error is being retried: an idle source does not wake up.
public final class FileSource: HealthSource, @unchecked Sendable {
    // @unchecked: `counters` (a Mutex) is shared with other threads; every var is touched
    // only by the thread inside run().
    public let name: String
    let config: HealthSourceConfig
    let queue: any HealthRecordQueue
    let clock: any WallClock
    let logger: Logger
    let commitInterval: TimeInterval
    let batchSize: Int
    let anchorKey: String

    private let counters: HealthSourceCounters

    private static let fingerprintBytes = 128
    /// Lines consumed without a record (old, bad, headers) that still move the anchor.
    private static let linesPerAnchorCommit = 5_000
    /// Records per commit while working through a backlog.
    private static let bulkBatchSize = 5_000

    private struct OpenFile {
        var fd: Int32
        var identity: FileIdentity
        var path: String
        var watch: Int32?
    }

    private var processor: HealthLineProcessor
    private var inotify: Inotify?
    private var directoryWatch: Int32?
    private var current: OpenFile?
    private var resumed = false
    private var buffer = LineBuffer()
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    /// Bytes of `current` read into `buffer`.
    private var readOffset: Int64 = 0
    /// End of the last complete line processed: where a restart goes on.
    private var consumedOffset: Int64 = 0
    private var lineNumber: Int64 = 0
    private var fingerprint: [UInt8] = []
    private var pending: [NewRecord] = []
    private var linesSinceCommit = 0
    /// Monotonic time of the first line not yet committed.
    private var dirtySince: TimeInterval?
    private var retryAt: TimeInterval?
    private var backfillEnd: Int64?
    private var backfillCutoff: Date?
    private var backfillSamples = 0
    private var lastReportedDecile = -1

    public init(config: HealthSourceConfig, queue: any HealthRecordQueue, commitInterval: TimeInterval,
                batchSize: Int = 500, clock: any WallClock = SystemClock(),
                clockTrust: ClockTrust = .live(trustSystemClock: false), logger: Logger) {
        name = config.name
        self.config = config
        self.queue = queue
        self.clock = clock
        self.logger = logger
        self.commitInterval = commitInterval
        self.batchSize = max(1, batchSize)
        anchorKey = "file:" + config.path
        counters = HealthSourceCounters(name: config.name, kind: .file)
        processor = HealthLineProcessor(format: config.format, sourceName: config.name, counters: counters, logger: logger,
                                        clockTrust: clockTrust)
    }

    public func status() -> HealthSourceStatus { counters.snapshot() }

    /// The thread's stop flag while `run` runs.
    private var stop: Waker?
    private var isStopping: Bool { stop?.isWoken ?? true }
    private var uptime: TimeInterval { ProcessInfo.processInfo.systemUptime }

    public func run(until stop: Waker) {
        self.stop = stop
        do {
            inotify = try Inotify()
        } catch {
            logger.warning("inotify is not available (\(error)); checking \(config.path) every \(Int(HealthSourceTiming.pollWithoutInotify.delay(afterFailures: 1))) s instead")
        }
        while !isStopping {
            // An unset clock does not stop reading: samples dated from it are held and
            // corrected once it is set (ClockCorrection); their own times are kept.
            if retryAt.map({ uptime >= $0 }) ?? true {
                retryAt = nil
                step()
            }
            waitForChange()
        }
        _ = commit()
        closeCurrent()
    }

    /// One pass: make sure the directory is watched and the file open, read what is new,
    /// notice rotation, commit when due.
    private func step() {
        if directoryWatch == nil, let inotify {
            let directory = (config.path as NSString).deletingLastPathComponent
            let mask = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
            directoryWatch = inotify.add(directory.isEmpty ? "." : directory, mask: mask)
            if directoryWatch == nil {
                setHealth(.unhealthy(reason: "directory of \(config.path) does not exist: create it or fix [health.source] path"))
                retryAt = uptime + HealthSourceTiming.retry.delay(afterFailures: 1)
                return
            }
        }
        if !resumed {
            guard resume() else { return }
            resumed = true
        }
        if current == nil {
            guard open(config.path, at: 0, line: 0) else { return }
        }
        follow()
        if commitDue() { _ = commit() }
    }

    // MARK: Starting from the anchor

    /// Finds where the last run stopped. False when the anchor cannot be read (retried).
    private func resume() -> Bool {
        let anchor: SourceAnchor?
        do {
            anchor = try queue.anchor(for: anchorKey)
        } catch {
            setHealth(.unhealthy(reason: "cannot read the anchor of \(config.path) from the queue: \(error)"))
            retryAt = uptime + HealthSourceTiming.retry.delay(afterFailures: 1)
            return false
        }
        guard let anchor else {
            // First start: import what the file already holds from the last backfill_days.
            if let identity = FileIdentity.of(path: config.path), identity.size > 0 {
                backfillEnd = identity.size
                backfillCutoff = clock.now().addingTimeInterval(-Double(config.backfillDays) * 86_400)
                logger.info("health source \(name): importing the last \(config.backfillDays) days of \(config.path) (\(identity.size) bytes)")
                reportBackfill()
            }
            return true
        }
        let extra = FileAnchorExtra(json: anchor.extra)
        let savedFingerprint = extra?.fingerprintBytes ?? []
        processor.parser.restore(state: extra?.parserState)
        if let end = extra?.backfillEnd, let cutoff = extra?.backfillCutoff, anchor.offset < end {
            backfillEnd = end
            backfillCutoff = Date(timeIntervalSince1970: cutoff)
        }
        let anchored = FileIdentity.of(path: config.path).map {
            $0.device == anchor.device && $0.inode == anchor.inode
        } ?? false
        if anchored {
            guard open(config.path, at: anchor.offset, line: anchor.line) else { return false }
            if let file = current, file.identity.size >= anchor.offset,
               FileIdentity.prefix(fd: file.fd, count: savedFingerprint.count) == savedFingerprint {
                fingerprint = savedFingerprint
                return true
            }
            // Truncated (or rewritten) while the agent was stopped.
            closeCurrent()
            if let copy = findCopy(of: savedFingerprint, atLeast: anchor.offset, excluding: nil) {
                logger.info("health source \(name): \(config.path) was truncated while stopped; finishing its copy \(copy) from byte \(anchor.offset)")
                finish(copy, from: anchor.offset, line: anchor.line)
            } else {
                logger.warning("health source \(name): \(config.path) was truncated while stopped and no copy was found; reading it from the start")
            }
            return true
        }
        // The anchored file is no longer at the path: rotated while the agent was stopped.
        if let rotated = FileIdentity.siblings(of: config.path).first(where: { path in
            FileIdentity.of(path: path).map { $0.device == anchor.device && $0.inode == anchor.inode } ?? false
        }) {
            logger.info("health source \(name): \(config.path) was rotated while stopped; finishing \(rotated) from byte \(anchor.offset)")
            finish(rotated, from: anchor.offset, line: anchor.line)
        } else {
            logger.warning("health source \(name): the file last read at \(config.path) is gone (rotated and removed?); lines written to it after byte \(anchor.offset) cannot be read")
        }
        return true
    }

    /// Reads a file that will not grow any more (a rotated file, a copytruncate copy) to
    /// its end, commits, and closes it.
    private func finish(_ path: String, from offset: Int64, line: Int64) {
        guard open(path, at: offset, line: line, watch: false) else { return }
        readAvailable()
        if let rest = buffer.takeRest() { consume(rest) }
        if commit() {
            closeCurrent()
        }
    }

    /// A sibling that starts with the same bytes as the file had and is long enough: the
    /// copy logrotate's copytruncate made before truncating.
    private func findCopy(of fingerprint: [UInt8], atLeast size: Int64, excluding: FileIdentity?) -> String? {
        guard fingerprint.count >= 16 else { return nil }
        for path in FileIdentity.siblings(of: config.path) {
            guard let identity = FileIdentity.of(path: path), identity.size >= size,
                  !(excluding.map(identity.sameFile(as:)) ?? false) else { continue }
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            if FileIdentity.prefix(fd: fd, count: fingerprint.count) == fingerprint { return path }
        }
        return nil
    }

    // MARK: Reading

    /// Opens `path` as the current file, positioned at `offset`.
    @discardableResult
    private func open(_ path: String, at offset: Int64, line: Int64, watch: Bool = true) -> Bool {
        closeCurrent()
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            if code == EACCES || code == EPERM {
                setHealth(.unhealthy(reason: "cannot read \(path): permission denied: give the service user read access to it (its group or mode)",
                                     code: .permissionDenied))
                logger.error("\(AgentErrorCode.permissionDenied.rawValue) cannot read \(path): permission denied; \(AgentErrorCode.permissionDenied.hint)")
                retryAt = uptime + HealthSourceTiming.permissionRetry.delay(afterFailures: 1)
            } else if code == ENOENT {
                setHealth(.unhealthy(reason: "waiting for \(path) to be created"))
                if inotify == nil { retryAt = uptime + HealthSourceTiming.pollWithoutInotify.delay(afterFailures: 1) }
            } else {
                setHealth(.unhealthy(reason: "cannot open \(path): \(String(cString: strerror(code)))"))
                retryAt = uptime + HealthSourceTiming.retry.delay(afterFailures: 1)
            }
            return false
        }
        guard let identity = FileIdentity.of(fd: fd), lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
            close(fd)
            retryAt = uptime + HealthSourceTiming.retry.delay(afterFailures: 1)
            return false
        }
        let watchDescriptor = watch ? inotify?.add(path, mask: UInt32(IN_MODIFY)) : nil
        current = OpenFile(fd: fd, identity: identity, path: path, watch: watchDescriptor)
        readOffset = offset
        consumedOffset = offset
        committedOffset = offset
        lineNumber = line
        committedLine = line
        fingerprint = []
        buffer.reset()
        setHealth(.healthy)
        return true
    }

    private func closeCurrent() {
        guard let file = current else { return }
        if let watch = file.watch { inotify?.remove(watch) }
        close(file.fd)
        current = nil
        buffer.reset()
    }

    /// Reads what is new in the current file, then checks it is still the file at the path.
    private func follow() {
        guard let file = current else { return }
        readAvailable()
        guard retryAt == nil, let now = FileIdentity.of(fd: file.fd) else { return }
        let atPath = FileIdentity.of(path: config.path)
        if let atPath, !atPath.sameFile(as: file.identity) {
            // Renamed away and a new file created: the old one is finished through the
            // descriptor (its writer may have added lines since), then the new one starts.
            logger.info("health source \(name): \(config.path) was rotated; finishing the old file (\(consumedOffset) bytes read)")
            readAvailable()
            if let rest = buffer.takeRest() { consume(rest) }
            guard commit() else { return }
            closeCurrent()
            if open(config.path, at: 0, line: 0) { readAvailable() }
            return
        }
        if now.size < readOffset || !fingerprintMatches(file) {
            logger.info("health source \(name): \(file.path) was truncated (copytruncate?); reading it from the start")
            // Lines written after our read position but before the truncation live on in
            // the copy, if there is one: finishing it commits them with what is pending.
            if let copy = findCopy(of: fingerprint, atLeast: consumedOffset, excluding: file.identity) {
                logger.info("health source \(name): finishing the copy \(copy) from byte \(consumedOffset)")
                finish(copy, from: consumedOffset, line: lineNumber)
                // A failed commit leaves the copy open; the next pass finishes it as a rotated file.
                guard current == nil else { return }
            }
            // The pending lines of the old content are committed with an anchor at the
            // start of the new content, never with an offset into bytes that are gone.
            guard open(config.path, at: 0, line: 0) else { return }
            linesSinceCommit = max(linesSinceCommit, 1)
            guard commit() else { return }
            readAvailable()
        }
    }

    /// True while the file still starts with the bytes it started with.
    private func fingerprintMatches(_ file: OpenFile) -> Bool {
        fingerprint.isEmpty || FileIdentity.prefix(fd: file.fd, count: fingerprint.count) == fingerprint
    }

    /// Reads to the end of the current file, consuming complete lines. Stops early when a
    /// commit fails (the rest waits in the file).
    private func readAvailable() {
        guard let file = current else { return }
        while !isStopping && retryAt == nil {
            let n = chunk.withUnsafeMutableBytes { read(file.fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno != EAGAIN {
                    setHealth(.unhealthy(reason: "cannot read \(file.path): \(String(cString: strerror(errno)))"))
                    retryAt = uptime + HealthSourceTiming.retry.delay(afterFailures: 1)
                }
                return
            }
            if n == 0 {
                // Caught up: a full batch is not held back for the commit interval.
                if pending.count >= batchSize, !commit() { rewindToCommitted() }
                if backfillEnd == nil { counters.update { $0.caughtUp = true } }
                return
            }
            readOffset += Int64(n)
            // A full chunk means more is waiting (a backlog, a backfill): bigger batches
            // then, because each commit costs an fsync and that, not parsing, is the limit.
            let limit = n == chunk.count ? Self.bulkBatchSize : batchSize
            chunk.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            while let line = buffer.next() {
                consume(line)
                if pending.count >= limit || linesSinceCommit >= Self.linesPerAnchorCommit {
                    guard commit() else {
                        // Put the position back to the commit point: the lines after it are
                        // read again once the queue takes writes.
                        rewindToCommitted()
                        return
                    }
                }
            }
        }
    }

    private func consume(_ line: LineBuffer.Line) {
        let place = current.map(\.path) ?? config.path
        lineNumber += 1
        linesSinceCommit += 1
        if dirtySince == nil { dirtySince = uptime }
        switch line {
        case .overlong(let bytes, let first):
            consumedOffset += Int64(bytes)
            if first { processor.overlong(place: "\(place):\(lineNumber)") } else { lineNumber -= 1 }
        case .text(let text, let bytes):
            let lineEnd = consumedOffset + Int64(bytes)
            let inBackfill = backfillEnd.map { lineEnd <= $0 } ?? false
            let before = pending.count
            processor.process(text, place: "\(place):\(lineNumber)", now: clock.now(),
                              notBefore: inBackfill ? backfillCutoff : nil, into: &pending)
            consumedOffset = lineEnd
            if inBackfill { backfillSamples += pending.count - before }
        }
        if let end = backfillEnd, consumedOffset >= end {
            backfillEnd = nil
            backfillCutoff = nil
            reportBackfill(done: end, total: end)
        }
    }

    private var committedOffset: Int64 = 0
    private var committedLine: Int64 = 0
    private var commitFailing = false

    private func rewindToCommitted() {
        guard let file = current else { return }
        pending.removeAll()
        buffer.reset()
        consumedOffset = committedOffset
        readOffset = committedOffset
        lineNumber = committedLine
        linesSinceCommit = 0
        lseek(file.fd, off_t(committedOffset), SEEK_SET)
    }

    // MARK: Committing

    private func commitDue() -> Bool {
        guard let since = dirtySince else { return false }
        return uptime - since >= commitInterval
    }

    /// Writes the pending records and the anchor in one transaction.
    private func commit() -> Bool {
        guard let file = current, linesSinceCommit > 0 || !pending.isEmpty else { return true }
        if fingerprint.count < Self.fingerprintBytes && consumedOffset > Int64(fingerprint.count) {
            fingerprint = FileIdentity.prefix(fd: file.fd, count: Int(min(Int64(Self.fingerprintBytes), consumedOffset)))
        }
        let extra = FileAnchorExtra(fingerprint: fingerprint, parserState: processor.parser.state,
                                    backfillEnd: backfillEnd, backfillCutoff: backfillCutoff?.timeIntervalSince1970)
        let anchor = SourceAnchor(source: anchorKey, device: file.identity.device, inode: file.identity.inode,
                                  offset: consumedOffset, line: lineNumber, extra: extra.json)
        do {
            try queue.enqueue(pending, anchor: anchor)
        } catch {
            let full = QueueError.isStorageFull(error)
            commitFailing = true
            setHealth(.unhealthy(reason: "cannot write samples of \(config.path) to the queue: \(error)",
                                 code: full ? .storageFull : nil))
            logger.error("health source \(name): commit failed, retrying in \(Int(HealthSourceTiming.retry.delay(afterFailures: 1))) s: \(error)")
            retryAt = uptime + HealthSourceTiming.retry.delay(afterFailures: 1)
            return false
        }
        let written = pending.count
        counters.update { $0.samplesWritten += written }
        pending.removeAll(keepingCapacity: true)
        linesSinceCommit = 0
        dirtySince = nil
        committedOffset = consumedOffset
        committedLine = lineNumber
        if commitFailing {
            commitFailing = false
            setHealth(.healthy)
        }
        if backfillEnd != nil { reportBackfill() }
        return true
    }

    // MARK: Waiting

    private func waitForChange() {
        var timeout: TimeInterval?
        func earliest(_ t: TimeInterval) { timeout = min(timeout ?? t, t) }
        if let since = dirtySince { earliest(max(0, since + commitInterval - uptime)) }
        if let retryAt { earliest(max(0, retryAt - uptime)) }
        if inotify == nil { earliest(2) }
        var fds = [stop?.fd ?? -1]
        if let inotify { fds.append(inotify.fd) }
        _ = Poll.wait(fds, timeout: timeout)
        counters.update { $0.wakeups += 1 }
        if let events = inotify?.drain() {
            for event in events where event.watch == directoryWatch && event.mask & UInt32(IN_IGNORED) != 0 {
                directoryWatch = nil // the directory went away; watched again when it returns
            }
            // A change (a new file at the path, permissions fixed) is worth trying at once.
            if !events.isEmpty, current == nil { retryAt = nil }
        }
    }

    // MARK: Status

    private func setHealth(_ health: StreamHealth) {
        counters.update { $0.health = health }
    }

    private func reportBackfill(done: Int64? = nil, total: Int64? = nil) {
        guard let total = total ?? backfillEnd else { return }
        let progress = BackfillProgress(bytesDone: done ?? consumedOffset, bytesTotal: total, samples: backfillSamples)
        counters.update { $0.backfill = progress }
        let decile = Int(progress.fraction * 10)
        if decile != lastReportedDecile {
            lastReportedDecile = decile
            logger.info("health source \(name): backfill \(decile * 10)% (\(progress.bytesDone) of \(total) bytes, \(progress.samples) samples)")
        }
    }
}
