import AgentCore

/// Which streams the scheduled upload cycles send while the connection is metered
/// (`[upload] on_metered`, docs/laptop.md#metered-networks). Audio is the bulk of the
/// bytes (about 10 MB an hour against a few kB of location and health), so `small` holds
/// only it back. Deferred records are never dropped: they wait in the queue for an unmetered
/// connection. `sync`, the person asking, sends everything whatever the network.
public enum MeteredUploadRule {
    /// The streams that wait now.
    public static func deferred(onMetered: OnMetered, metered: Bool) -> Set<StreamName> {
        guard metered else { return [] }
        switch onMetered {
        case .all: return []
        case .small: return [.microphone]
        case .none: return Set(StreamName.allCases)
        }
    }

    /// Whether `stream` may be sent now; `forced` is `ariata-agent sync`.
    public static func mayGo(_ stream: StreamName, onMetered: OnMetered, metered: Bool, forced: Bool) -> Bool {
        forced || !deferred(onMetered: onMetered, metered: metered).contains(stream)
    }
}
