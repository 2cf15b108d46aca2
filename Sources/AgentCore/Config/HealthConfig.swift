/// `[health]` and its `[[health.source]]` entries.
public struct HealthConfig: Sendable, Equatable {
    public var enabled: Bool = false
    /// Samples read are committed at least this often (seconds).
    public var commitInterval: Int = 300
    public var sources: [HealthSourceConfig] = []
    /// The metrics the server lets the device capture (its `enabled_metrics`), nil for all.
    /// Not a key of the file: the daemon sets it from the server's answer
    /// (docs/upload.md#the-servers-stream-switches).
    public var serverMetrics: Set<String>?
    /// Bluetooth LE sources: one heart-rate sample per this many seconds (the mean of the
    /// window's readings).
    public var bleHeartRateSeconds: Int = 5
    /// Bluetooth LE sources: one heart-rate variability sample (SDNN) per this many seconds
    /// of RR intervals (docs/streams/health.md#heart-rate-variability).
    public var hrvWindowSeconds: Int = 300

    public init() {}

}

extension HealthConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.bool("enabled", \.enabled),
         .int("commit_interval", \.commitInterval, range: 1...3_600, unit: "seconds"),
         .int("ble_heart_rate_seconds", \.bleHeartRateSeconds, range: 1...3_600, unit: "seconds"),
         // Below 60 s the figure is an ultra-short-term one, not comparable with a 5-minute
         // SDNN; allowed for tests and for people who know that (docs/streams/health.md).
         .int("hrv_window_seconds", \.hrvWindowSeconds, range: 10...3_600, unit: "seconds"),
         .tables("source", \.sources)]
    }

    func validate(_ s: ConfigSection) throws {
        if enabled && sources.isEmpty {
            throw s.error("source", "health is enabled but no [[health.source]] is configured: add one or set enabled = false")
        }
    }
}

/// One health source: a file that grows, a serial port, or a Bluetooth LE heart-rate sensor.
public struct HealthSourceConfig: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable { case file, serial, ble }
    public enum Format: String, Sendable, CaseIterable { case jsonl, csv, keyvalue }

    public var kind: Kind
    public var path: String
    public var format: Format
    /// Serial only.
    public var baud: Int = 9_600
    /// A name for `metadata.source`; the path when not given. A Bluetooth LE source without
    /// an `address` looks for the sensor that advertises this name.
    public var name: String
    /// Bluetooth LE only: the sensor's address (`A0:9E:1A:12:34:56`, upper case), when given.
    public var address: String?
    /// File only: on first start, import samples of the last N days already in the file.
    public var backfillDays: Int = 7
    /// The metrics the server lets the device capture, nil for all: `HealthConfig.serverMetrics`,
    /// handed to each source by the health stream (not a key of the file).
    public var serverMetrics: Set<String>?
    /// Bluetooth LE only: `[health] ble_heart_rate_seconds` and `hrv_window_seconds`, handed
    /// to each source by the health stream (not keys of the source).
    public var heartRateSeconds: Int = 5
    public var hrvWindowSeconds: Int = 300

    public init(kind: Kind, path: String, format: Format, name: String? = nil) {
        self.kind = kind
        self.path = path
        self.format = format
        self.name = name ?? path
    }

    /// A Bluetooth LE source: the sensor at `address`, or the one advertising `name`.
    public static func ble(address: String?, name: String? = nil) -> HealthSourceConfig {
        var config = HealthSourceConfig(kind: .ble, path: "", format: .jsonl, name: name ?? address.map { "ble:\($0)" } ?? "")
        config.address = address
        return config
    }

    /// A Bluetooth address as BlueZ writes it (six hex pairs, upper case), or nil.
    public static func bluetoothAddress(_ text: String) -> String? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.utf8.count == 2 && $0.allSatisfy(\.isHexDigit) }) else { return nil }
        return text.uppercased()
    }
}

extension HealthSourceConfig: ConfigTable {
    /// `path` has no default: reading it fails when it is not given.
    static var defaults: Self { Self(kind: .file, path: "", format: .jsonl) }
    static var keys: [ConfigKey<Self>] {
        [.choice("kind", \.kind, allowed: Kind.allCases),
         // Required for files and serial ports (`validate`); a Bluetooth sensor has none.
         ConfigKey("path", read: { s, t in t.path = try s.optionalString("path") ?? "" },
                   write: { $0.path.isEmpty ? nil : $0.path }),
         .choice("format", \.format, allowed: Format.allCases),
         .int("baud", \.baud, range: 50...4_000_000),
         // Read after `path`, its default.
         ConfigKey("name", read: { s, t in t.name = try s.optionalString("name") ?? t.path }, write: { $0.name }),
         .int("backfill_days", \.backfillDays, range: 0...3_650, unit: "days"),
         ConfigKey("address", read: { s, t in
             guard let text = try s.optionalString("address") else { return }
             guard let address = HealthSourceConfig.bluetoothAddress(text) else {
                 throw s.error("address", "\"\(text)\" is not a Bluetooth address: give six hex pairs such as \"A0:9E:1A:12:34:56\" (bluetoothctl --timeout 10 scan on lists the sensors nearby)")
             }
             t.address = address
         }, write: { $0.address })]
    }

    mutating func validate(_ s: ConfigSection) throws {
        switch kind {
        case .file, .serial:
            if path.isEmpty {
                throw s.error("path", "missing: give the file or serial device to read, e.g. path = \"/var/log/hr.jsonl\"")
            }
            if address != nil { throw s.error("address", "only a kind = \"ble\" source has an address") }
        case .ble:
            if !path.isEmpty { throw s.error("path", "a kind = \"ble\" source has no path: give address = \"A0:9E:1A:12:34:56\" (or name)") }
            if address == nil && name.isEmpty {
                throw s.error("address", "missing: give the sensor's address = \"A0:9E:1A:12:34:56\" or its advertised name = \"Polar H10 12345678\" (bluetoothctl --timeout 10 scan on lists the sensors nearby)")
            }
            if name.isEmpty, let address { name = "ble:\(address)" }
        }
    }
}
