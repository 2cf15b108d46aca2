/// The daemon's latest power decision as it stores it for `status` (agent_state, JSON).
public struct StoredPowerState: Codable, Sendable, Equatable {
    public var source: String
    public var batteryPercent: Int?
    public var batteryStatus: String?
    public var microphonePaused: Bool
    public var uploadsPostponed: Bool
    public var uploadFactor: Int
    public var effects: [String]

    // Stored under the name it had before (`uploadsHeld`), so a status of a newer version
    // reads what a running older daemon stored.
    private enum CodingKeys: String, CodingKey {
        case source, batteryPercent, batteryStatus, microphonePaused, uploadsPostponed = "uploadsHeld", uploadFactor, effects
    }

    public init(source: String, batteryPercent: Int?, batteryStatus: String?, microphonePaused: Bool,
                uploadsPostponed: Bool, uploadFactor: Int, effects: [String]) {
        self.source = source
        self.batteryPercent = batteryPercent
        self.batteryStatus = batteryStatus
        self.microphonePaused = microphonePaused
        self.uploadsPostponed = uploadsPostponed
        self.uploadFactor = uploadFactor
        self.effects = effects
    }
}
