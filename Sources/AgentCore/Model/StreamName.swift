/// The three streams of the ingest contract. The raw value is the wire name.
public enum StreamName: String, CaseIterable, Codable, Sendable, Comparable {
    case location
    case microphone
    case health

    public static func < (lhs: StreamName, rhs: StreamName) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
