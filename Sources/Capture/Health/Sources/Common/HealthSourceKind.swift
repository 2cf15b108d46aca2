import AgentCore
import DBus
import Foundation
import Logging
import Platform

/// One kind of health source, in its folder under Health/Sources/: how its settings
/// become a running source, and what `doctor` and `onboard` check for it. Its settings
/// (keys and their checks) are `Settings`, in AgentCore, where the file is read.
public protocol HealthSourceKind: Sendable {
    associatedtype Settings: HealthSourceKindSettings
    static func make(_ settings: Settings, context: HealthSourceContext) -> any HealthSource
    /// Can the source be read (the file, the port, the sensor)? Blocking, briefly.
    static func check(_ settings: Settings, context: HealthCheckContext) -> DeviceCheck
    /// The group the service user must be in to read it (`dialout` for a serial port).
    static var serviceUserGroup: String? { get }
}

extension HealthSourceKind {
    public static var serviceUserGroup: String? { nil }
}

/// Every kind of health source: a new kind is its folder and one line here (and its
/// settings in AgentCore: docs/development.md, "Adding a health input kind").
public enum HealthSourceKinds {
    public static let all: [any HealthSourceKind.Type] = [FileSourceKind.self, SerialSourceKind.self, BLESourceKind.self]

    public static func kind(of settings: HealthSourceSettings) -> (any HealthSourceKind.Type)? {
        all.first { $0.handles(settings) }
    }

    /// The source `settings` asks for; nil for a kind nobody registered.
    public static func make(_ settings: HealthSourceSettings, context: HealthSourceContext) -> (any HealthSource)? {
        kind(of: settings)?.make(any: settings, context: context)
    }

    /// `doctor`'s check of a source.
    public static func check(_ settings: HealthSourceSettings, context: HealthCheckContext) -> DeviceCheck {
        kind(of: settings)?.check(any: settings, context: context)
            ?? DeviceCheck(name: "health \(settings.kind) \(settings.name)", stream: .health, outcome: .failed,
                           detail: "no kind \"\(settings.kind)\" in this agent")
    }

    /// The groups the service user needs for `sources`, each once.
    public static func serviceUserGroups(_ sources: [HealthSourceSettings]) -> [String] {
        var groups: [String] = []
        for source in sources {
            if let group = kind(of: source)?.serviceUserGroup, !groups.contains(group) { groups.append(group) }
        }
        return groups
    }
}

extension HealthSourceKind {
    static func handles(_ settings: HealthSourceSettings) -> Bool { settings.kindSettings is Settings }

    static func make(any settings: HealthSourceSettings, context: HealthSourceContext) -> (any HealthSource)? {
        (settings.kindSettings as? Settings).map { make($0, context: context) }
    }

    static func check(any settings: HealthSourceSettings, context: HealthCheckContext) -> DeviceCheck? {
        (settings.kindSettings as? Settings).map { check($0, context: context) }
    }
}

/// What a source is made with besides its own settings: the stream's settings, where it
/// writes, its clocks and logger.
public struct HealthSourceContext: Sendable {
    /// `[health]`: the commit interval, the server's metrics, the sensors' windows.
    public var health: HealthConfig
    public var queue: any HealthRecordQueue
    public var clock: any WallClock
    /// Whether the wall clock can be believed; samples dated from one that cannot are
    /// written held, with their place on the boot clock.
    public var clockTrust: ClockTrust
    public var bleTuning: BLETuning
    /// Where a source keeps what it learnt of its device (a sensor's adopted address);
    /// nil: nothing is kept across restarts.
    public var agentState: AgentStateStore?
    public var logger: Logger

    public init(health: HealthConfig, queue: any HealthRecordQueue, clock: any WallClock = SystemClock(),
                clockTrust: ClockTrust = .live(trustSystemClock: false), bleTuning: BLETuning = BLETuning(),
                agentState: AgentStateStore? = nil, logger: Logger) {
        self.health = health
        self.agentState = agentState
        self.queue = queue
        self.clock = clock
        self.clockTrust = clockTrust
        self.bleTuning = bleTuning
        self.logger = logger
    }

    public var commitInterval: TimeInterval { TimeInterval(health.commitInterval) }
}

/// What a kind's check needs of the machine.
public struct HealthCheckContext: Sendable {
    /// The user the service runs as (the fixes name it).
    public var serviceUser: String
    /// Where BlueZ is (the system bus; a test's private one).
    public var bus: DBusBus

    public init(serviceUser: String, bus: DBusBus = .system) {
        self.serviceUser = serviceUser
        self.bus = bus
    }
}
