import Foundation

/// A private D-Bus bus: a real `dbus-daemon` on a socket in a temporary directory, open to
/// everyone (its policy allows every message), so tests run system services (GeoClue,
/// python-dbusmock's logind, NetworkManager, notifications, BlueZ) without touching the
/// machine's own buses. `environment` gives the variables a client reads.
public final class DBusRig: @unchecked Sendable {
    public enum Kind: String, Sendable { case system, session }

    public let kind: Kind
    public let directory: TemporaryDirectory
    public let address: String
    private var daemon: ChildProcess
    private var services: [ChildProcess] = []

    public init(_ kind: Kind = .system) throws {
        self.kind = kind
        directory = try TemporaryDirectory("ariata-dbus")
        let socket = directory.file("bus")
        address = "unix:path=\(socket)"
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>\(kind.rawValue)</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_type="method_return"/>
                <allow send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="signal"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
              </policy>
            </busconfig>
            """
        try config.write(toFile: directory.file("bus.conf"), atomically: true, encoding: .utf8)
        daemon = try Self.startDaemon(in: directory)
        try waitForDaemon()
    }

    private static func startDaemon(in directory: TemporaryDirectory) throws -> ChildProcess {
        try ChildProcess("dbus-daemon", ["--config-file=\(directory.file("bus.conf"))", "--nofork", "--nopidfile"],
                         logDirectory: directory.path)
    }

    /// The socket file appears before the daemon accepts on it: ready once it answers.
    private func waitForDaemon() throws {
        let socket = directory.file("bus")
        try waitUntil("dbus-daemon to answer on \(socket)", timeout: 15) {
            guard daemon.isRunning else { throw RigFailure("dbus-daemon exited: \(daemon.stderr())") }
            return FileManager.default.fileExists(atPath: socket) && ((try? hasOwner("org.freedesktop.DBus")) ?? false)
        }
    }

    /// The bus daemon killed and started again on the same address, as when dbus is
    /// restarted: every connection to it is lost, and the services started on it stopped
    /// (start them again on the new bus).
    public func restartDaemon() throws {
        // Killed, not stopped, and before its services: a daemon told to end, or a service
        // stopped first, lets the names go before the bus goes.
        daemon.signal(SIGKILL)
        daemon.wait(timeout: 5)
        for service in services.reversed() { service.stop(grace: 2) }
        services = []
        try? FileManager.default.removeItem(atPath: directory.file("bus"))
        daemon = try Self.startDaemon(in: directory)
        try waitForDaemon()
    }

    deinit {
        for service in services.reversed() { service.stop(grace: 2) }
        daemon.stop(grace: 2)
    }

    /// The variable a client of this bus reads.
    public var environment: [String: String] {
        [kind == .system ? "DBUS_SYSTEM_BUS_ADDRESS" : "DBUS_SESSION_BUS_ADDRESS": address]
    }

    /// Starts a program with this bus in its environment, stopped with the rig (or by
    /// `stop(_:)`); waits until `name` is owned on the bus when given.
    @discardableResult
    public func start(_ executable: String, _ arguments: [String], owning name: String? = nil,
                      environment extra: [String: String] = [:], timeout: TimeInterval = 20) throws -> ChildProcess {
        let child = try ChildProcess(executable, arguments, logDirectory: directory.path,
                                     environment: environment.merging(extra) { $1 })
        services.append(child)
        if let name {
            try waitUntil("\(name) on the private \(kind.rawValue) bus", timeout: timeout) {
                guard child.isRunning else { throw RigFailure("\(child.name) exited: \(child.stderr())") }
                return try hasOwner(name)
            }
        }
        return child
    }

    /// Stops a program started by `start` (SIGTERM, then SIGKILL).
    public func stop(_ child: ChildProcess) {
        child.stop(grace: 2)
        services.removeAll { $0 === child }
    }

    /// Whether `name` has an owner on the bus, asked with `busctl`.
    public func hasOwner(_ name: String) throws -> Bool {
        let output = try run("busctl", ["--address=\(address)", "list", "--no-legend", "--acquired"])
        return output.split(separator: "\n").contains { $0.split(separator: " ").first.map(String.init) == name }
    }

    /// A `busctl` command against this bus; its standard output.
    @discardableResult
    public func busctl(_ arguments: [String]) throws -> String {
        try run("busctl", ["--address=\(address)"] + arguments)
    }

    private func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try ChildProcess.locate(executable))
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problem = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw RigFailure("\(executable) \(arguments.joined(separator: " ")): \(String(decoding: problem, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
