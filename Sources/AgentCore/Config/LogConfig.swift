/// `[log]`.
public struct LogConfig: Sendable, Equatable {
    public static let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// One of `levels`.
    public var level: String = "info"

    public init() {}
}

extension LogConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] { [.choice("level", \.level, allowed: levels)] }
}
