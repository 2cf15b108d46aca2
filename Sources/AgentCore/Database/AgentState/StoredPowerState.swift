/// The daemon's latest power decision as it stores it for `status` (agent_state, JSON).
public struct StoredPowerState: Codable, Sendable, Equatable {
    public var source: String
    public var batteryPercent: Int?
    public var batteryStatus: String?
    public var microphonePaused: Bool
    public var uploadsHeld: Bool
    public var uploadFactor: Int
    public var effects: [String]

    public init(source: String, batteryPercent: Int?, batteryStatus: String?, microphonePaused: Bool,
                uploadsHeld: Bool, uploadFactor: Int, effects: [String]) {
        self.source = source
        self.batteryPercent = batteryPercent
        self.batteryStatus = batteryStatus
        self.microphonePaused = microphonePaused
        self.uploadsHeld = uploadsHeld
        self.uploadFactor = uploadFactor
        self.effects = effects
    }
}
