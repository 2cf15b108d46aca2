import AgentCore
import DBus
import Foundation

/// Internal timings of the location stream that users do not need to tune (the user's
/// knobs live in `[location]`). Tests shorten them.
public struct LocationTuning: Sendable, Equatable {
    /// Delays between attempts to reach gpsd: 0.5 s doubling to 10 s. The cap is short
    /// because gpsd is a local service that comes back in seconds (a restart, or socket
    /// activation at boot), and every attempt is one cheap local connect.
    public var reconnect = Backoff(base: 0.5, cap: 10)
    /// Connected to gpsd but no fix for this long makes the stream unhealthy (nil: three
    /// sampling intervals, at least two minutes, so a receiver's cold start does not count).
    public var staleFixAfter: TimeInterval?
    /// How long `stop()` waits for the location thread. Only a TCP connect to a remote
    /// gpsd_host that does not answer, or GeoClue's start (`geoClueStartTimeout`), can take
    /// longer; the thread then ends by itself.
    public var stopTimeout: TimeInterval = 5
    /// The longest gpsd's reports wait unread in the socket while connected, when the
    /// sampling interval is longer: 10 s of reports (a TPV and a SKY a second, ~1 KB each)
    /// is far below a socket's buffer, and a single wake-up per 10 s.
    public var maxReadGap: TimeInterval = 10
    /// The bus GeoClue is on (the system bus, from `DBUS_SYSTEM_BUS_ADDRESS` when set).
    public var geoClueBus: DBusBus = .system
    /// Delays between attempts to reach GeoClue: 2 s doubling to a minute (it is
    /// bus-activated, so an attempt also starts it).
    public var geoClueRetry = Backoff(base: 2, cap: 60)
    /// With source `auto` on GeoClue: how often gpsd is asked whether a receiver appeared
    /// (a USB receiver plugged in), and how long one ask may take.
    public var gpsdProbeInterval: TimeInterval = 60
    public var gpsdProbeTimeout: TimeInterval = 2
    /// GeoClue sends a fix only when the device moved (or its first): a stationary laptop
    /// rightly gets none for hours. Only no fix at all this long after GeoClue started
    /// makes the stream unhealthy.
    public var geoClueFirstFixLimit: TimeInterval = 600
    /// How long GeoClue's `Start` may take (it waits for a desktop agent).
    public var geoClueStartTimeout: TimeInterval = 25
    /// `geoclue_mode` per-fix: the seconds between fixes (nil: `geoclue_fix_interval`;
    /// tests shorten it) and how long one fix may take before the client is let go.
    public var geoClueFixInterval: TimeInterval?
    public var geoClueFixTimeout: TimeInterval = 30
    /// Where `geoclue_mode = "auto"` reads whether the machine is on battery (`[power]
    /// sysfs_path`; nil: never, as with `[power] enabled = false`), and how often while it
    /// holds a client.
    public var powerSupplyPath: String? = "/sys/class/power_supply"
    public var powerCheckInterval: TimeInterval = 60

    /// How long a receiver's fixes must stay within their own error before it counts as
    /// stationary, and the least error granted a fix (a receiver's own estimate of a
    /// parked position is often smaller than how far it wanders).
    public var stationaryWindow: TimeInterval = 60
    public var stationaryMinRadius: Double = 15

    public init() {}

    func staleFixLimit(interval: Int) -> TimeInterval {
        staleFixAfter ?? max(120, 3 * TimeInterval(interval))
    }
}
