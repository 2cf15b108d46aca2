/// One desktop notice: what happened, and in its body what to do about it
/// (docs/laptop.md#desktop-notices).
public struct DesktopNotice: Sendable, Equatable {
    /// One episode per key: the notice goes once while its condition lasts, and may go
    /// again once the condition has cleared and comes back.
    public var key: String
    public var summary: String
    public var body: String
    /// Shown until dismissed (the notification server's "critical" urgency).
    public var urgent: Bool
    /// Maintenance rounds in a row the condition must be seen before the notice goes: more
    /// than one for a condition that a retry of a second may clear by itself.
    public var confirmRounds: Int

    public init(key: String, summary: String, body: String, urgent: Bool = false, confirmRounds: Int = 1) {
        self.key = key
        self.summary = summary
        self.body = body
        self.urgent = urgent
        self.confirmRounds = max(1, confirmRounds)
    }
}

/// Where the daemon's desktop notices go: the notification server of the person's
/// session (`DesktopNotifier`).
public protocol NoticeSink: Sendable {
    /// Shows `notice`; returns at once (a slow or missing notification server must not
    /// hold up the maintenance round that found it).
    func send(_ notice: DesktopNotice)
}
