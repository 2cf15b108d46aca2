import AgentCore
import DBus
import Foundation

/// The Bluetooth LE source's waits, in one place; tests shorten them.
public struct BLETuning: Sendable, Equatable {
    /// The bus BlueZ is on (the system bus, from `DBUS_SYSTEM_BUS_ADDRESS` when set).
    public var bus: DBusBus = .system
    /// Between attempts to reach the sensor: 1 s doubling to 5 s, so a strap that comes
    /// back in range is taken up within seconds. An attempt is a D-Bus call that sleeps in
    /// poll; nothing runs while a source has no sensor configured.
    public var reconnect = Backoff(base: 1, cap: 5)
    /// How long one attempt looks for a sensor BlueZ does not know yet (a discovery).
    public var scanSeconds: TimeInterval = 10
    /// How long `Device1.Connect` and the services' resolution may take.
    public var connectTimeout: TimeInterval = 30
    /// Samples are committed within this long of their window closing (or the stream's
    /// `commit_interval` when shorter): what a crash can lose.
    public var commitDelay: TimeInterval = 30

    public init() {}
}
