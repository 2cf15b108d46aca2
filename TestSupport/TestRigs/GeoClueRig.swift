import Foundation
import Platform
import Rigs
import Synchronization

/// Debian's real GeoClue (`/usr/libexec/geoclue`) on a private system bus, its only
/// source the network-NMEA one, fed by this rig through a Unix socket: a position the
/// test sets (and moves), as a phone sharing its GPS over the network would send it.
///
/// GeoClue reads its configuration from /etc/geoclue/geoclue.conf only; the rig runs it in
/// a mount namespace of its own (`unshare -m`) with the rig's file bound over that path,
/// so the machine's file is never touched. The configuration is Debian's own with Wi-Fi,
/// modem and compass sources off and `agentWhitelist` as the agent whitelist; or, with a
/// `wifiLocator` URL, with the Wi-Fi source on and asking that locator (`GeoLocatorRig`)
/// and the NMEA source off.
public final class GeoClueRig: @unchecked Sendable {
    public let bus: DBusRig
    public let socketPath: String
    private let feeder: NMEASocketFeeder
    private var geoclue: ChildProcess?
    private let configPath: String
    /// GeoClue asks a locator only while GLib's network monitor says the network is fully
    /// up: on a machine without a default route (a build box offline, a test namespace)
    /// it would never ask. The rig's locator is on 127.0.0.1, so GLib's plain monitor,
    /// which takes the network as up, stands in for the netlink one.
    private let environment: [String: String]

    /// - Parameter agentWhitelist: desktop ids allowed to act as GeoClue agents.
    public init(agentWhitelist: [String] = ["geoclue-demo-agent", "gnome-shell", "ariata-agent"],
                position: (latitude: Double, longitude: Double) = (52.5, 13.4), wifiLocator: String? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/libexec/geoclue") else {
            throw NotInstalled(program: "geoclue-2.0 (/usr/libexec/geoclue)")
        }
        bus = try DBusRig(.system)
        socketPath = bus.directory.file("nmea.sock")
        configPath = bus.directory.file("geoclue.conf")
        environment = wifiLocator == nil ? [:] : ["GIO_USE_NETWORK_MONITOR": "base"]
        try Self.configuration(agentWhitelist: agentWhitelist, wifiLocator: wifiLocator).write(toFile: configPath, atomically: true, encoding: .utf8)
        feeder = try NMEASocketFeeder(path: socketPath, position: position)
        try startGeoClue()
    }

    deinit {
        if let geoclue { bus.stop(geoclue) }
        feeder.stop()
    }

    /// Moves the position the socket reports from the next second on.
    public func move(to position: (latitude: Double, longitude: Double)) {
        feeder.position.value.withLock { $0 = position }
    }

    /// The HDOP the socket reports from the next second on (nil: the synthetic drive's,
    /// which GeoClue turns into an accuracy of a metre or so). GeoClue's NMEA source makes
    /// a coarse accuracy of a large one.
    public func report(hdop: Double?) {
        feeder.position.hdop.withLock { $0 = hdop }
    }

    /// Stops GeoClue (as `systemctl stop geoclue` would); `startGeoClue` brings it back.
    public func stopGeoClue() {
        if let geoclue { bus.stop(geoclue) }
        geoclue = nil
    }

    public func startGeoClue() throws {
        let script = "mount --bind \(configPath) /etc/geoclue/geoclue.conf && exec /usr/libexec/geoclue -t 0 --nmea-socket \(socketPath)"
        geoclue = try bus.start("unshare", ["-m", "sh", "-c", script], owning: "org.freedesktop.GeoClue2", environment: environment)
    }

    /// GeoClue's log so far (its stderr), for a failing test.
    public var log: String { geoclue?.stderr() ?? "" }

    /// Debian's geoclue.conf with only the network-NMEA source on, or only the Wi-Fi one
    /// asking `wifiLocator`.
    public static func configuration(agentWhitelist: [String], wifiLocator: String? = nil) throws -> String {
        let original = try String(contentsOfFile: "/etc/geoclue/geoclue.conf", encoding: .utf8)
        var section = ""
        var lines: [String] = []
        for line in original.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("[") { section = trimmed }
            if section == "[agent]", trimmed.hasPrefix("whitelist=") {
                lines.append("whitelist=" + agentWhitelist.joined(separator: ";"))
            } else if section == "[wifi]", trimmed.hasPrefix("enable="), let wifiLocator {
                lines.append("enable=true")
                lines.append("url=\(wifiLocator)")
            } else if section == "[wifi]", trimmed.hasPrefix("url="), wifiLocator != nil {
                continue
            } else if ["[wifi]", "[3g]", "[cdma]", "[modem-gps]", "[compass]", "[static-source]"].contains(section),
                      trimmed.hasPrefix("enable=") {
                lines.append("enable=false")
            } else if section == "[network-nmea]", trimmed.hasPrefix("enable=") {
                lines.append(wifiLocator == nil ? "enable=true" : "enable=false")
            } else {
                lines.append(line)
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// A Unix socket that sends GGA and RMC sentences of a position once a second to every
/// client (GeoClue's network-NMEA source connects to it).
final class NMEASocketFeeder: Sendable {
    final class Position: Sendable {
        let value: Mutex<(latitude: Double, longitude: Double)>
        let hdop = Mutex<Double?>(nil)
        init(_ value: (latitude: Double, longitude: Double)) { self.value = Mutex(value) }
    }

    let position: Position
    private let listener: Int32
    private let thread: Mutex<NamedThread?>

    init(path: String, position: (latitude: Double, longitude: Double)) throws {
        self.position = Position(position)
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RigFailure("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 4) == 0 else {
            close(fd)
            throw RigFailure("cannot listen on \(path): \(String(cString: strerror(errno)))")
        }
        listener = fd
        thread = Mutex(nil)
        let position = self.position
        let started = try NamedThread(name: "nmea-feeder") { waker in
            var clients: [Int32] = []
            defer { clients.forEach { close($0) } }
            while true {
                if waker.wait(for: fd, timeout: 1) == .woken { return }
                if let ready = Poll.wait([fd], timeout: 0), ready[0] != 0 {
                    let client = accept(fd, nil, nil)
                    if client >= 0 { clients.append(client) }
                }
                let (latitude, longitude) = position.value.withLock { $0 }
                let text = Self.sentences(latitude: latitude, longitude: longitude, at: Date(), hdop: position.hdop.withLock { $0 })
                clients = clients.filter { client in
                    let sent = text.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                    if sent < 0 { close(client) }
                    return sent >= 0
                }
            }
        }
        thread.withLock { $0 = started }
    }

    func stop() {
        thread.withLock { $0.take() }?.stop(timeout: 5)
        close(listener)
    }

    static func sentences(latitude: Double, longitude: Double, at time: Date, hdop: Double? = nil) -> String {
        var epoch = NMEADrive.synthetic(epochs: 1, start: time, origin: (latitude, longitude))[0]
        epoch.speed = 0
        epoch.course = 0
        if let hdop { epoch.hdop = hdop }
        let all = NMEADrive.sentences(for: epoch).split(separator: "\r\n").map(String.init)
        return all.filter { $0.hasPrefix("$GPGGA") || $0.hasPrefix("$GPRMC") }.map { $0 + "\r\n" }.joined()
    }
}
