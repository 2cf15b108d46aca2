/// The outcome of one device check of `onboard` and `doctor`: the Linux version of the
/// iOS app's permission prompts. Here, below Capture, so that each kind of health source
/// checks itself (`HealthSourceKind.check`).
public struct DeviceCheck: Sendable, Equatable {
    public enum Outcome: String, Sendable {
        case ok, warning, failed
    }

    public var name: String
    /// The stream that cannot work when this check fails (nil for checks of the machine).
    public var stream: StreamName?
    public var outcome: Outcome
    public var detail: String
    /// The command (or config change) that fixes it.
    public var fix: String?

    public init(name: String, stream: StreamName? = nil, outcome: Outcome, detail: String, fix: String? = nil) {
        self.name = name
        self.stream = stream
        self.outcome = outcome
        self.detail = detail
        self.fix = fix
    }
}
