/// `[notify]`: desktop notices (org.freedesktop.Notifications on the session bus) for the
/// problems only the person at the laptop can fix (docs/laptop.md#desktop-notices).
public struct NotifyConfig: Sendable, Equatable {
    /// nil (the key left out): on for the user service, off for the system service, which
    /// has no desktop session to show them in.
    public var enabled: Bool?

    public init() {}

    /// The variable the user unit sets (`Environment=ARIATA_SERVICE=user`): the one sign at
    /// run time of which service this is, since both run the same `ariata-agent run`.
    public static let serviceVariable = "ARIATA_SERVICE"

    /// Whether notices are sent: the key when given, else whether this runs as the user
    /// service.
    public func isOn(environment: [String: String]) -> Bool {
        enabled ?? (environment[Self.serviceVariable] == "user")
    }
}

extension NotifyConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.optionalBool("enabled", \.enabled)]
    }
}
