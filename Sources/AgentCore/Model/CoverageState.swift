/// What a stream was doing over a span of time, as the coverage ledger keeps it: capturing,
/// or the reason it was not (docs/operations.md, "Coverage"). The raw value is the word in
/// the database, `coverage --json` and `status`; `symbol` is its cell in `coverage`'s
/// picture.
public enum CoverageState: String, CaseIterable, Codable, Sendable {
    case captured
    /// The microphone's quiet hours (`[[microphone.quiet]]`).
    case quiet
    /// The microphone in a `[[location.exclude]]` zone with `microphone = "mute"`.
    case mutedPlace = "muted_place"
    /// `ariata-agent pause`.
    case paused
    /// The server's stream switch.
    case serverOff = "server_off"
    /// The power policy: the microphone held on a low battery until mains.
    case lowBattery = "low_battery"
    /// The machine asleep (suspend).
    case asleep
    /// The microphone's or a health source's device missing or failing (the stream not live).
    case deviceMissing = "device_missing"
    /// The location stream without a fix (gpsd or GeoClue quiet, or not reachable).
    case noFix = "no_fix"
    /// The daemon stopped cleanly (`systemctl stop`, a shutdown) until it started again.
    case stopped
    /// The daemon ended without stopping (killed, crashed, a power cut): from the last
    /// moment known captured to the next start.
    case lost

    /// One character per state for the terminal picture.
    public var symbol: Character {
        switch self {
        case .captured: return "#"
        case .quiet: return "q"
        case .mutedPlace: return "m"
        case .paused: return "p"
        case .serverOff: return "s"
        case .lowBattery: return "b"
        case .asleep: return "z"
        case .deviceMissing: return "d"
        case .noFix: return "f"
        case .stopped: return "."
        case .lost: return "X"
        }
    }

    /// Words for the legend and the largest gap's reason.
    public var label: String {
        switch self {
        case .captured: return "captured"
        case .quiet: return "quiet hours"
        case .mutedPlace: return "muted place"
        case .paused: return "paused by you"
        case .serverOff: return "switched off by the server"
        case .lowBattery: return "low battery"
        case .asleep: return "asleep"
        case .deviceMissing: return "device missing"
        case .noFix: return "no fix"
        case .stopped: return "agent stopped"
        case .lost: return "lost (killed or power cut)"
        }
    }
}
