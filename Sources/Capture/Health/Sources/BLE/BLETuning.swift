import AgentCore
import DBus
import Foundation

/// The Bluetooth LE source's waits, in one place; tests shorten them.
public struct BLETuning: Sendable, Equatable {
    /// The bus BlueZ is on (the system bus, from `DBUS_SYSTEM_BUS_ADDRESS` when set).
    public var bus: DBusBus = .system
    /// Between attempts to connect to a sensor that is away: 5 s doubling to 5 min, so a
    /// strap in a drawer all day costs an attempt every few minutes. A strap that comes
    /// back is taken up sooner than that, when BlueZ sees it (`BlueZDeviceWatch`).
    public var reconnect = Backoff(base: 5, cap: 300)
    /// How long one attempt looks for a sensor BlueZ does not know yet (a discovery), and
    /// how long each of the away watch's discoveries lasts.
    public var scanSeconds: TimeInterval = 10
    /// While the sensor is away and BlueZ offers no advertisement monitor, a filtered
    /// discovery of `scanSeconds` this often, so BlueZ hears it advertise (a bonded sensor
    /// is also connected by the kernel alone; with the monitor no discovery runs).
    public var awayScanEvery: TimeInterval = 120
    /// Connected and no notification for this long: reported unhealthy, with its fix.
    public var silenceLimit: TimeInterval = 30
    /// How long `Device1.Connect` and the services' resolution may take.
    public var connectTimeout: TimeInterval = 30
    /// Samples are committed within this long of their window closing (or the stream's
    /// `commit_interval` when shorter): what a crash can lose.
    public var commitDelay: TimeInterval = 30

    public init() {}
}
