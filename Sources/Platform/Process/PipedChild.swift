import Foundation

/// A program started with posix_spawn(3), its standard input and output on pipes to this
/// process and its standard error inherited (the journal gets it). For helper programs the
/// daemon runs for a while and then ends: closing `input` is how they are told to stop.
/// Not Foundation's `Process`: that pulls in the corelibs code the daemon keeps out of its
/// upload cycle (docs/decisions/0005-start-up-page-drop.md).
public final class PipedChild: @unchecked Sendable {
    // @unchecked: one owner uses it from one thread at a time.

    public let pid: pid_t
    /// Write end of the child's standard input; -1 once closed.
    public private(set) var input: Int32
    /// Read end of the child's standard output.
    public let output: Int32
    private var buffered: [UInt8] = []
    private var exited: Int32?

    public struct SpawnFailure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(program: String, arguments: [String] = [], environment: [String]? = nil) throws {
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        guard Self.pipeClosedOnExec(&toChild) else { throw SpawnFailure(description: "pipe: \(String(cString: strerror(errno)))") }
        guard Self.pipeClosedOnExec(&fromChild) else {
            close(toChild[0]); close(toChild[1])
            throw SpawnFailure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], STDIN_FILENO)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], STDOUT_FILENO)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The daemon ignores SIGPIPE; the child starts with the default dispositions.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let environ = (environment ?? ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }).map { strdup($0) } + [nil]
        defer { environ.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, program, &actions, &attributes, argv, environ)
        close(toChild[0])
        close(fromChild[1])
        guard spawned == 0 else {
            close(toChild[1])
            close(fromChild[0])
            throw SpawnFailure(description: "cannot start \(program): \(String(cString: strerror(spawned)))")
        }
        pid = child
        input = toChild[1]
        output = fromChild[0]
    }

    /// A pipe whose ends other children do not inherit (the file actions dup the child's).
    private static func pipeClosedOnExec(_ fds: inout [Int32]) -> Bool {
        guard pipe(&fds) == 0 else { return false }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        return true
    }

    deinit {
        finish(within: 0)
        close(output)
    }

    /// Writes all of `text` to the child's standard input; false when the child is gone.
    @discardableResult
    public func write(_ text: String) -> Bool {
        guard input >= 0 else { return false }
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(input, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    /// The next line of the child's standard output (without its newline), waiting at
    /// most `timeout` seconds; nil when the time ran out or the output ended first.
    public func readLine(timeout: TimeInterval) -> String? {
        let deadline = Monotonic.now + timeout
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            let left = deadline - Monotonic.now
            guard left > 0, let events = Poll.wait([output], timeout: left), events[0] != 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            buffered += chunk[..<n]
        }
    }

    /// Closes the child's standard input (its sign to stop), waits up to `within` seconds
    /// for it to exit, then kills it. Returns its exit status (128 + signal when killed).
    @discardableResult
    public func finish(within seconds: TimeInterval) -> Int32 {
        if let exited { return exited }
        if input >= 0 {
            close(input)
            input = -1
        }
        let deadline = Monotonic.now + seconds
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { status = 0; break }
            if Monotonic.now >= deadline {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                break
            }
            usleep(20_000)
        }
        let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        exited = code
        return code
    }
}
