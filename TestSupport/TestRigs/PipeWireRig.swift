import Foundation
import Rigs
import Synchronization

/// A real desktop sound-server session of the tests' own: a session D-Bus, the PipeWire
/// daemon, WirePlumber and pipewire-pulse, in a private `XDG_RUNTIME_DIR` (and a private
/// home for WirePlumber's state). Its microphone is a real PipeWire source,
/// `module-pipe-source` (loaded through pipewire-pulse with `pactl`), fed 16 kHz S16_LE
/// mono from a FIFO by `feed(_:)`; unloading it is a microphone unplugged.
///
/// `enter()` points this process at the session (`XDG_RUNTIME_DIR` and the bus address are
/// process-wide, like `ALSARig`'s ALSA_CONFIG_PATH): ALSA's `default`, which pipewire-alsa
/// routes to PipeWire, then captures from the pipe source. Everything is stopped and the
/// environment put back when the rig goes. Throws `NotInstalled` when a package is missing.
public final class PipeWireRig: @unchecked Sendable {
    // @unchecked: the processes and the module id are used from the test's thread only;
    // the feeder's flag is a Mutex.
    public static let sourceName = "ariata_pipe"
    /// pipewire-alsa's file that makes ALSA's `default` PipeWire.
    public static let alsaDefault = "/etc/alsa/conf.d/99-pipewire-default.conf"

    public let runtimeDirectory: TemporaryDirectory
    public let home: TemporaryDirectory
    public let fifo: String
    /// The variables a client of this session needs.
    public let environment: [String: String]
    /// Seconds from the first process started to the pipe source listed by WirePlumber.
    public private(set) var startUpSeconds: Double = 0
    private var processes: [ChildProcess] = []
    private var module: String?
    private var defaultChosen = false
    private var feeder: Thread?
    private let feederState = FeederState()
    private var saved: [String: String?] = [:]

    public init() throws {
        for program in ["dbus-daemon", "pipewire", "wireplumber", "pipewire-pulse", "pactl", "pw-record", "wpctl"] {
            _ = try ChildProcess.locate(program)
        }
        guard FileManager.default.fileExists(atPath: Self.alsaDefault) else {
            throw NotInstalled(program: "pipewire-alsa (\(Self.alsaDefault), ALSA's default routed to PipeWire)")
        }
        signal(SIGPIPE, SIG_IGN) // the feeder's writes after the source went away fail with EPIPE instead
        runtimeDirectory = try TemporaryDirectory("ariata-pw-run")
        chmod(runtimeDirectory.path, 0o700)
        home = try TemporaryDirectory("ariata-pw-home")
        fifo = runtimeDirectory.file("microphone.fifo")
        let bus = "unix:path=\(runtimeDirectory.file("bus"))"
        environment = ["XDG_RUNTIME_DIR": runtimeDirectory.path, "DBUS_SESSION_BUS_ADDRESS": bus, "HOME": home.path,
                       "XDG_CONFIG_HOME": home.file(".config"), "XDG_STATE_HOME": home.file(".local/state"),
                       "PIPEWIRE_RUNTIME_DIR": runtimeDirectory.path]
        let started = Date()
        let dbus = try start("dbus-daemon", ["--session", "--address=\(bus)", "--nofork", "--nopidfile", "--print-address"])
        try waitUntil("the session bus", timeout: 30) { !dbus.stdout().isEmpty || !dbus.isRunning }
        guard dbus.isRunning else { throw RigFailed("dbus-daemon --session exited: \(dbus.stderr())") }
        let pipewire = try start("pipewire", [])
        try waitUntil("PipeWire's socket", timeout: 30) { Self.isSocket(self.runtimeDirectory.file("pipewire-0")) || !pipewire.isRunning }
        _ = try start("wireplumber", [])
        // Generous: under the parallel suite's load the session takes seconds, not 0.3 s. A
        // pipewire-pulse that starts while the session is still making its runtime directory
        // can exit at once ("mkdir …/pulse failed: File exists", seen once in a parallel
        // run): it is started again, twice at most.
        var attempt = 1
        while true {
            let pulse = try start("pipewire-pulse", [])
            try waitUntil("pipewire-pulse", timeout: 30) { (try? self.pactl(["info"])) != nil || !pulse.isRunning }
            if pulse.isRunning { break }
            guard attempt < 3 else { throw RigFailed("pipewire-pulse exited \(attempt) times: \(pulse.stderr())") }
            attempt += 1
            Thread.sleep(forTimeInterval: 0.5)
        }
        try loadSource()
        startUpSeconds = Date().timeIntervalSince(started)
    }

    deinit {
        stopFeeding()
        for process in processes.reversed() { process.stop(grace: 2) }
        leave()
    }

    /// Points this process at the session (until `leave()` or the rig goes).
    public func enter() {
        for (name, value) in environment where saved[name] == nil {
            saved[name] = ProcessInfo.processInfo.environment[name].map { Optional($0) } ?? .some(nil)
            setenv(name, value, 1)
        }
    }

    /// Puts back the environment `enter()` changed.
    public func leave() {
        for (name, value) in saved {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
        saved = [:]
    }

    /// Plugs the microphone in: loads the pipe source and waits until WirePlumber lists it.
    public func loadSource() throws {
        guard module == nil else { return }
        module = try pactl(["load-module", "module-pipe-source", "source_name=\(Self.sourceName)", "file=\(fifo)",
                            "format=s16le", "rate=16000", "channels=1"]).trimmingCharacters(in: .whitespacesAndNewlines)
        try waitUntil("the pipe source listed", timeout: 10) { try self.pactl(["list", "short", "sources"]).contains(Self.sourceName) }
        // The person's choice, made once: WirePlumber remembers it and makes the source the
        // default again whenever it comes back, as with a USB microphone plugged in again.
        if !defaultChosen {
            _ = try pactl(["set-default-source", Self.sourceName])
            defaultChosen = true
        }
    }

    /// Unplugs it: the source and its FIFO go.
    public func unloadSource() throws {
        guard let module else { return }
        _ = try pactl(["unload-module", module])
        self.module = nil
        try waitUntil("the pipe source gone", timeout: 10) { !(try self.pactl(["list", "short", "sources"]).contains(Self.sourceName)) }
    }

    /// Writes `samples` into the source's FIFO over and over, as fast as the source takes
    /// them, until `stopFeeding()`; follows the source when it goes and comes back.
    public func feed(_ samples: [Int16]) {
        stopFeeding()
        let bytes = samples.map(\.littleEndian).withUnsafeBytes { Data($0) }
        let fifo = self.fifo
        let state = feederState
        state.feeding.withLock { $0 = true }
        state.done.withLock { $0 = false }
        let thread = Thread {
            defer { state.done.withLock { $0 = true } }
            var fd: Int32 = -1
            var offset = 0
            while state.feeding.withLock({ $0 }) {
                if fd < 0 {
                    fd = open(fifo, O_WRONLY | O_NONBLOCK) // ENXIO/ENOENT while the source is away
                    if fd < 0 { usleep(20_000); continue }
                }
                var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                guard poll(&poller, 1, 100) > 0 else { continue }
                let written = bytes.withUnsafeBytes { raw in
                    write(fd, raw.baseAddress! + offset, min(4_096, bytes.count - offset))
                }
                if written < 0 {
                    if errno == EAGAIN { continue }
                    close(fd) // EPIPE: the source went away
                    fd = -1
                    continue
                }
                offset = (offset + written) % bytes.count
            }
            if fd >= 0 { close(fd) }
        }
        thread.name = "pipewire-rig-feeder"
        feeder = thread
        thread.start()
    }

    public func stopFeeding() {
        feederState.feeding.withLock { $0 = false }
        try? waitUntil("the feeder stopped", timeout: 5) { self.feederState.done.withLock { $0 } }
        feeder = nil
    }

    /// Runs `pactl` in the session; its output, or a thrown error with its stderr.
    @discardableResult
    public func pactl(_ arguments: [String]) throws -> String {
        let child = try ChildProcess("pactl", arguments, logDirectory: home.path, environment: environment)
        guard let status = child.wait(timeout: 10) else {
            child.stop()
            throw RigFailed("pactl \(arguments.joined(separator: " ")) did not finish in 10 s")
        }
        guard status == 0 else { throw RigFailed("pactl \(arguments.joined(separator: " ")) failed (\(status)): \(child.stderr())") }
        return child.stdout()
    }

    /// Starts another client of the session (`pw-record`, `arecord -D default`).
    public func client(_ program: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(program, arguments, logDirectory: home.path, environment: environment)
    }

    /// The daemons' logs, for a failing test's message.
    public func logs() -> String {
        processes.map { "--- \($0.name)\n\($0.stdout())\($0.stderr())" }.joined(separator: "\n")
    }

    private func start(_ program: String, _ arguments: [String]) throws -> ChildProcess {
        let child = try ChildProcess(program, arguments, logDirectory: home.path, environment: environment)
        processes.append(child)
        return child
    }

    static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
    }
}

/// The feeder thread's flags: feed on, and whether it has ended.
private final class FeederState: Sendable {
    let feeding = Mutex(false)
    let done = Mutex(true)
}

public struct RigFailed: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
