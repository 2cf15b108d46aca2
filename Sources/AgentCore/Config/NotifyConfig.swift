/// `[notify]`: desktop notices (org.freedesktop.Notifications on the session bus) for the
/// problems only the person at the laptop can fix (docs/laptop.md#desktop-notices).
public struct NotifyConfig: Sendable, Equatable {
    /// nil (the key left out): on for the user service, off for the system service, which
    /// has no desktop session to show them in.
    public var enabled: Bool?

    public init() {}

    /// Whether notices are sent: the key when given, else whether this runs as the user
    /// service (`ServiceMode`: the units say which).
    public func isOn(as mode: ServiceMode) -> Bool {
        enabled ?? (mode == .user)
    }
}

extension NotifyConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.optionalBool("enabled", \.enabled)]
    }
}
