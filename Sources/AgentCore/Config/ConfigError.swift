/// A configuration problem, always naming the file and, where there is one, the key.
public struct ConfigError: Error, CustomStringConvertible, Equatable {
    public var file: String
    /// The dotted key (`location.interval`), nil for a problem with the file as a whole.
    public var key: String?
    public var message: String

    public init(file: String, key: String?, message: String) {
        self.file = file
        self.key = key
        self.message = message
    }

    public var description: String {
        if let key { return "\(file): \(key): \(message)" }
        return "\(file): \(message)"
    }
}
