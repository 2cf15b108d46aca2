public enum AgentVersion {
    public static let string = "0.1.0"
    public static var userAgent: String { "ariata-agent/\(string)" }
}
