/// `[upload]`: when and in what portions the queue is sent.
public struct UploadConfig: Sendable, Equatable {
    /// Seconds between upload cycles.
    public var interval: Int = 300
    public var batchMaxRecords: Int = 500
    /// Bound on the JSON of one request, so a backlog never sits in memory at once.
    public var batchMaxBytes: Int = 1_000_000
    /// What the scheduled cycles send while NetworkManager says the connection is metered
    /// (docs/laptop.md#metered-networks).
    public var onMetered: OnMetered = .small
    /// Connection ids or Wi-Fi SSIDs that count as metered whatever NetworkManager guesses
    /// (a phone's hotspot it cannot tell: docs/laptop.md#metered-networks).
    public var meteredNetworks: [String] = []

    public init() {}

}

/// What goes out on a metered connection (a phone's hotspot, a mobile modem).
public enum OnMetered: String, Sendable, Equatable, CaseIterable {
    /// Everything, as on any other network.
    case all
    /// Location and health (a few kB an hour); audio waits for an unmetered connection.
    case small
    /// Nothing until an unmetered connection (`ariata-agent sync` still sends).
    case none
}

extension UploadConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.int("interval", \.interval, range: 5...86_400, unit: "seconds"),
         .int("batch_max_records", \.batchMaxRecords, range: 1...100_000),
         .int("batch_max_bytes", \.batchMaxBytes, range: 1_000...100_000_000, unit: "bytes"),
         .choice("on_metered", \.onMetered, allowed: OnMetered.allCases),
         .strings("metered_networks", \.meteredNetworks) { name in
             name.trimmingCharacters(in: .whitespaces).isEmpty
                 ? "an empty name: give a connection's name ('nmcli connection show') or a Wi-Fi network's SSID" : nil
         }]
    }
}
