import AgentCore
import Foundation
import Logging
import Platform

/// One complete line the follower read, and where it ends.
struct FollowedLine {
    var line: LineBuffer.Line
    /// The byte offset just past the line: where a restart goes on once it is committed.
    var end: Int64
    /// The file it was read from and its line number there, for logs.
    var path: String
    var number: Int64
}

/// What a follower reads for (the file source): it turns lines into records and commits
/// them with the follower's position as the anchor.
protocol FileFollowerOutput: AnyObject {
    /// Where the last run stopped, nil on the very first; throws when that cannot be read.
    func resumePoint() throws -> FileFollower.Mark?
    func take(_ line: FollowedLine)
    /// A full batch: commit before reading on. `backlog`: more is waiting in the file.
    func batchIsFull(backlog: Bool) -> Bool
    /// When the next commit is due (monotonic), nil when none is.
    var commitDueAt: TimeInterval? { get }
    /// Commits what was taken, with `mark()` as the anchor (asked only when there is
    /// something to commit). `force`: even when nothing was taken since the last commit.
    /// False when the queue refused.
    func commit(force: Bool, at mark: () -> FileFollower.Mark) -> Bool
    /// Forget what was taken since the last commit: it is read again.
    func dropUncommitted()
    /// The file is read to its end, for now.
    func caughtUp()
}

/// Follows a file another program appends to, like `tail -F`, and hands its complete
/// lines on with their byte position (`FileFollowerOutput`). It knows files, not
/// records:
///
/// - watching: inotify on the file and its directory, so an idle follower sleeps in
///   poll(2) without a time-out (every 2 s without inotify);
/// - rotation by rename: the old file is read to its end through the open descriptor and
///   committed before the new one is opened from its start;
/// - copytruncate: a size below the read offset, or first bytes that no longer match,
///   start the file over; lines not read yet are recovered from the copy when a sibling
///   file starts with the same bytes;
/// - resuming from the anchor: the file it names, or, when that was rotated or truncated
///   while the agent was stopped, the rotated file or the copy;
/// - going back to the last commit when a commit is refused (the file is the buffer).
///
/// Lives on its source's thread only.
final class FileFollower {
    /// Where the follower is, as an anchor keeps it.
    struct Mark: Equatable {
        var device: UInt64
        var inode: UInt64
        /// After the last complete line consumed.
        var offset: Int64
        var line: Int64
        /// The file's first bytes (up to 128): tells a file truncated and rewritten in place
        /// from the one the offset belongs to, and finds its copy.
        var fingerprint: [UInt8]
    }

    let path: String
    private let sourceName: String
    private let counters: HealthSourceCounters
    private let logger: Logger
    private let stop: Waker
    private let output: any FileFollowerOutput

    private static let fingerprintBytes = 128

    private struct OpenFile {
        var fd: Int32
        var identity: FileIdentity
        var path: String
        var watch: Int32?
    }

    private var inotify: Inotify?
    private var directoryWatch: Int32?
    private var current: OpenFile?
    private var resumed = false
    private var buffer = LineBuffer()
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    /// Bytes of `current` read into `buffer`.
    private var readOffset: Int64 = 0
    /// End of the last complete line consumed: where a restart goes on.
    private var consumedOffset: Int64 = 0
    private var lineNumber: Int64 = 0
    private var committedOffset: Int64 = 0
    private var committedLine: Int64 = 0
    private var fingerprint: [UInt8] = []
    /// Monotonic time before which nothing is tried again (an error, a refused commit).
    private var retryAt: TimeInterval?

    init(path: String, sourceName: String, counters: HealthSourceCounters, logger: Logger, stop: Waker,
         output: any FileFollowerOutput) {
        self.path = path
        self.sourceName = sourceName
        self.counters = counters
        self.logger = logger
        self.stop = stop
        self.output = output
    }

    /// Follows until `stop` is woken, then commits what was taken and closes the file.
    func run() {
        do {
            inotify = try Inotify()
        } catch {
            logger.warning("inotify is not available (\(error)); checking \(path) every \(Int(HealthSourceTuning.pollWithoutInotify.delay(afterFailures: 1))) s instead")
        }
        while !stop.isWoken {
            if retryAt.map({ Monotonic.now >= $0 }) ?? true {
                retryAt = nil
                step()
            }
            waitForChange()
        }
        commit()
        closeCurrent()
    }

    /// One pass: make sure the directory is watched and the file open, read what is new,
    /// notice rotation, commit when due.
    private func step() {
        if directoryWatch == nil, let inotify {
            let directory = (path as NSString).deletingLastPathComponent
            let mask = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
            directoryWatch = inotify.add(directory.isEmpty ? "." : directory, mask: mask)
            if directoryWatch == nil {
                setHealth(.unhealthy(reason: "directory of \(path) does not exist: create it or fix [health.source] path"))
                retry(after: HealthSourceTuning.retry)
                return
            }
        }
        if !resumed {
            guard resume() else { return }
            resumed = true
        }
        if current == nil {
            guard open(path, at: 0, line: 0) else { return }
        }
        follow()
        if let due = output.commitDueAt, Monotonic.now >= due { commit() }
    }

    // MARK: Starting from the anchor

    /// Finds where the last run stopped. False when that cannot be done yet (retried).
    private func resume() -> Bool {
        let anchor: Mark?
        do {
            anchor = try output.resumePoint()
        } catch {
            setHealth(.unhealthy(reason: "cannot read the anchor of \(path) from the queue: \(error)"))
            retry(after: HealthSourceTuning.retry)
            return false
        }
        guard let anchor else { return true }
        let anchored = FileIdentity.of(path: path).map {
            $0.device == anchor.device && $0.inode == anchor.inode
        } ?? false
        if anchored {
            guard open(path, at: anchor.offset, line: anchor.line) else { return false }
            if let file = current, file.identity.size >= anchor.offset,
               FileIdentity.prefix(fd: file.fd, count: anchor.fingerprint.count) == anchor.fingerprint {
                fingerprint = anchor.fingerprint
                return true
            }
            // Truncated (or rewritten) while the agent was stopped.
            closeCurrent()
            if let copy = findCopy(of: anchor.fingerprint, atLeast: anchor.offset, excluding: nil) {
                logger.info("health source \(sourceName): \(path) was truncated while stopped; finishing its copy \(copy) from byte \(anchor.offset)")
                finish(copy, from: anchor.offset, line: anchor.line)
            } else {
                logger.warning("health source \(sourceName): \(path) was truncated while stopped and no copy was found; reading it from the start")
            }
            return true
        }
        // The anchored file is no longer at the path: rotated while the agent was stopped.
        if let rotated = FileIdentity.siblings(of: path).first(where: { sibling in
            FileIdentity.of(path: sibling).map { $0.device == anchor.device && $0.inode == anchor.inode } ?? false
        }) {
            logger.info("health source \(sourceName): \(path) was rotated while stopped; finishing \(rotated) from byte \(anchor.offset)")
            finish(rotated, from: anchor.offset, line: anchor.line)
        } else {
            logger.warning("health source \(sourceName): the file last read at \(path) is gone (rotated and removed?); lines written to it after byte \(anchor.offset) cannot be read")
        }
        return true
    }

    /// Reads a file that will not grow any more (a rotated file, a copytruncate copy) to
    /// its end, commits, and closes it.
    private func finish(_ finished: String, from offset: Int64, line: Int64) {
        guard open(finished, at: offset, line: line, watch: false) else { return }
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
        for sibling in FileIdentity.siblings(of: path) {
            guard let identity = FileIdentity.of(path: sibling), identity.size >= size,
                  !(excluding.map(identity.sameFile(as:)) ?? false) else { continue }
            let fd = Glibc.open(sibling, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            if FileIdentity.prefix(fd: fd, count: fingerprint.count) == fingerprint { return sibling }
        }
        return nil
    }

    // MARK: Reading

    /// Opens `file` as the current file, positioned at `offset`.
    @discardableResult
    private func open(_ file: String, at offset: Int64, line: Int64, watch: Bool = true) -> Bool {
        closeCurrent()
        let fd = Glibc.open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            if code == EACCES || code == EPERM {
                setHealth(.unhealthy(reason: "cannot read \(file): permission denied: give the service user read access to it (its group or mode)",
                                     code: .permissionDenied))
                logger.error("\(AgentErrorCode.permissionDenied.rawValue) cannot read \(file): permission denied; \(AgentErrorCode.permissionDenied.hint)")
                retry(after: HealthSourceTuning.permissionRetry)
            } else if code == ENOENT {
                setHealth(.unhealthy(reason: "waiting for \(file) to be created"))
                if inotify == nil { retry(after: HealthSourceTuning.pollWithoutInotify) }
            } else {
                setHealth(.unhealthy(reason: "cannot open \(file): \(String(cString: strerror(code)))"))
                retry(after: HealthSourceTuning.retry)
            }
            return false
        }
        guard let identity = FileIdentity.of(fd: fd), lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
            close(fd)
            retry(after: HealthSourceTuning.retry)
            return false
        }
        let watchDescriptor = watch ? inotify?.add(file, mask: UInt32(IN_MODIFY)) : nil
        current = OpenFile(fd: fd, identity: identity, path: file, watch: watchDescriptor)
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
        let atPath = FileIdentity.of(path: path)
        if let atPath, !atPath.sameFile(as: file.identity) {
            // Renamed away and a new file created: the old one is finished through the
            // descriptor (its writer may have added lines since), then the new one starts.
            logger.info("health source \(sourceName): \(path) was rotated; finishing the old file (\(consumedOffset) bytes read)")
            readAvailable()
            if let rest = buffer.takeRest() { consume(rest) }
            guard commit() else { return }
            closeCurrent()
            if open(path, at: 0, line: 0) { readAvailable() }
            return
        }
        if now.size < readOffset || !fingerprintMatches(file) {
            logger.info("health source \(sourceName): \(file.path) was truncated (copytruncate?); reading it from the start")
            // Lines written after our read position but before the truncation live on in
            // the copy, if there is one: finishing it commits them with what is pending.
            if let copy = findCopy(of: fingerprint, atLeast: consumedOffset, excluding: file.identity) {
                logger.info("health source \(sourceName): finishing the copy \(copy) from byte \(consumedOffset)")
                finish(copy, from: consumedOffset, line: lineNumber)
                // A failed commit leaves the copy open; the next pass finishes it as a rotated file.
                guard current == nil else { return }
            }
            // The pending lines of the old content are committed with an anchor at the
            // start of the new content, never with an offset into bytes that are gone.
            guard open(path, at: 0, line: 0), commit(force: true) else { return }
            readAvailable()
        }
    }

    /// True while the file still starts with the bytes it started with.
    private func fingerprintMatches(_ file: OpenFile) -> Bool {
        fingerprint.isEmpty || FileIdentity.prefix(fd: file.fd, count: fingerprint.count) == fingerprint
    }

    /// Reads to the end of the current file, handing on complete lines. Stops early when a
    /// commit is refused (the rest waits in the file).
    private func readAvailable() {
        guard let file = current else { return }
        while !stop.isWoken && retryAt == nil {
            let n = chunk.withUnsafeMutableBytes { read(file.fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno != EAGAIN {
                    setHealth(.unhealthy(reason: "cannot read \(file.path): \(String(cString: strerror(errno)))"))
                    retry(after: HealthSourceTuning.retry)
                }
                return
            }
            if n == 0 {
                // Caught up: a full batch is not held back for the commit interval.
                if output.batchIsFull(backlog: false), !commit() { rewindToCommitted() }
                output.caughtUp()
                return
            }
            readOffset += Int64(n)
            // A full chunk means more is waiting (a backlog, a backfill).
            let backlog = n == chunk.count
            chunk.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            while let line = buffer.next() {
                consume(line)
                if output.batchIsFull(backlog: backlog) {
                    guard commit() else {
                        // Back to the commit point: the lines after it are read again once
                        // the queue takes writes.
                        rewindToCommitted()
                        return
                    }
                }
            }
        }
    }

    private func consume(_ line: LineBuffer.Line) {
        lineNumber += 1
        switch line {
        case .overlong(let bytes, let first):
            consumedOffset += Int64(bytes)
            // The rest of an overlong line is not another line.
            if !first { lineNumber -= 1 }
        case .text(_, let bytes):
            consumedOffset += Int64(bytes)
        }
        output.take(FollowedLine(line: line, end: consumedOffset, path: current?.path ?? path, number: lineNumber))
    }

    private func rewindToCommitted() {
        guard let file = current else { return }
        output.dropUncommitted()
        buffer.reset()
        consumedOffset = committedOffset
        readOffset = committedOffset
        lineNumber = committedLine
        lseek(file.fd, off_t(committedOffset), SEEK_SET)
    }

    // MARK: Committing

    /// Commits through the output with the current position; a refusal pauses the
    /// follower for `HealthSourceTuning.retry`.
    @discardableResult
    private func commit(force: Bool = false) -> Bool {
        guard let file = current else { return true }
        guard output.commit(force: force, at: { mark(file) }) else {
            retry(after: HealthSourceTuning.retry)
            return false
        }
        committedOffset = consumedOffset
        committedLine = lineNumber
        return true
    }

    /// The current position as an anchor keeps it; reads the fingerprint on first need.
    private func mark(_ file: OpenFile) -> Mark {
        if fingerprint.count < Self.fingerprintBytes && consumedOffset > Int64(fingerprint.count) {
            fingerprint = FileIdentity.prefix(fd: file.fd, count: Int(min(Int64(Self.fingerprintBytes), consumedOffset)))
        }
        return Mark(device: file.identity.device, inode: file.identity.inode, offset: consumedOffset, line: lineNumber,
                    fingerprint: fingerprint)
    }

    // MARK: Waiting

    private func retry(after wait: Backoff) {
        retryAt = Monotonic.now + wait.delay(afterFailures: 1)
    }

    /// Sleeps until the file or its directory changes, a commit or a retry is due, or the
    /// source is stopped.
    private func waitForChange() {
        var timeout: TimeInterval?
        func earliest(_ deadline: TimeInterval) {
            let wait = max(0, deadline - Monotonic.now)
            timeout = min(timeout ?? wait, wait)
        }
        // Commits are made in a step, and no step runs before a retry is due.
        if let retryAt { earliest(retryAt) } else if let due = output.commitDueAt { earliest(due) }
        if inotify == nil { earliest(Monotonic.now + HealthSourceTuning.pollWithoutInotify.delay(afterFailures: 1)) }
        var fds = [stop.fd]
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

    private func setHealth(_ health: Liveness) {
        counters.update { $0.liveness = health }
    }
}
