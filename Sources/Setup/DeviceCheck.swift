import AgentCore
import Capture
import Foundation
import Platform

/// Runs the device checks for a configuration.
public struct DeviceChecks: Sendable {
    public var serviceUser: String
    public var gpsdTimeout: TimeInterval
    /// Which service the agent runs as: the system service must be its own GeoClue agent.
    public var serviceMode: ServiceMode
    public var geoClueWhitelist: GeoClueAgentWhitelist
    /// How long the GeoClue check waits for a real fix.
    public var geoClueFixTimeout: TimeInterval

    public init(serviceUser: String = "ariata", gpsdTimeout: TimeInterval = 3, serviceMode: ServiceMode = .system,
                geoClueWhitelist: GeoClueAgentWhitelist = .fromEnvironment(),
                geoClueFixTimeout: TimeInterval = DeviceChecks.geoClueFixTimeoutFromEnvironment()) {
        self.serviceUser = serviceUser
        self.gpsdTimeout = gpsdTimeout
        self.serviceMode = serviceMode
        self.geoClueWhitelist = geoClueWhitelist
        self.geoClueFixTimeout = geoClueFixTimeout
    }

    /// 30 s: a Wi-Fi scan and a locator's answer take a few; a cold modem GPS longer, but
    /// then its accuracy is what matters and the stream's own check covers the rest.
    /// `ARIATA_GEOCLUE_FIX_TIMEOUT` (seconds) shortens it for tests.
    public static func geoClueFixTimeoutFromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> TimeInterval {
        environment["ARIATA_GEOCLUE_FIX_TIMEOUT"].flatMap(TimeInterval.init).flatMap { $0 > 0 ? $0 : nil } ?? 30
    }

    public func run(_ config: AgentConfig) -> [DeviceCheck] {
        var checks: [DeviceCheck] = []
        if config.location.enabled {
            checks.append(LocationProbe(config: config.location, gpsdTimeout: gpsdTimeout, mode: serviceMode,
                                        whitelist: geoClueWhitelist, fixTimeout: geoClueFixTimeout).check())
        }
        if config.microphone.enabled {
            checks.append(ALSAProbe(device: config.microphone.device).check())
        }
        if config.health.enabled {
            let hasSensor = config.health.sources.contains { if case .ble = $0 { true } else { false } }
            let held = hasSensor ? DaemonHeldSensors(config: config) : nil
            for source in config.health.sources {
                if case .ble(let ble) = source, let check = held?.check(ble) {
                    checks.append(check)
                    continue
                }
                checks.append(HealthSourceKinds.check(source, context: HealthCheckContext(serviceUser: serviceUser)))
            }
        }
        checks.append(contentsOf: ServiceUserProbe(user: serviceUser, config: config).checks())
        checks.append(diskCheck(config))
        if let metered = MeteredNetworksCheck(config: config).check() { checks.append(metered) }
        return checks
    }

    func diskCheck(_ config: AgentConfig) -> DeviceCheck {
        let path = config.storage.database
        guard let free = DiskSpace.availableBytes(at: path) else {
            return DeviceCheck(name: "free disk", outcome: .warning, detail: "cannot tell the free space under \(path)")
        }
        let minimum = Int64(config.storage.minFreeMB) * 1_048_576
        let detail = "\(free / 1_048_576) MB free under \((path as NSString).deletingLastPathComponent)"
        if free < minimum {
            return DeviceCheck(name: "free disk", outcome: .failed, detail: detail + ", below the \(config.storage.minFreeMB) MB minimum (E004)",
                               fix: "free some space, or lower [storage] min_free_mb")
        }
        if free < minimum * 5 {
            return DeviceCheck(name: "free disk", outcome: .warning, detail: detail + ": little room for an offline backlog",
                               fix: "free some space; a day of audio takes about 170 MB")
        }
        return DeviceCheck(name: "free disk", outcome: .ok, detail: detail)
    }
}
