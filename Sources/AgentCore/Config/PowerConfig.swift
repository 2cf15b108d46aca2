/// `[power]`: battery-aware behaviour on laptops (docs/operations.md, Power).
public struct PowerConfig: Sendable, Equatable {
    public var enabled = true
    /// Where the kernel lists power supplies; a key so tests can point it at a fake tree.
    public var sysfsPath = "/sys/class/power_supply"
    /// On battery the upload interval is multiplied by this (1: unchanged).
    public var batteryUploadFactor = 2
    /// Below this battery level (percent) the microphone pauses and uploads wait for
    /// mains; 0 turns that off.
    public var lowBatteryPercent = 15
    /// Uploads go on even on a low battery once the queue holds this share of its cap
    /// (percent), so the storage guard does not start deleting.
    public var queueNearLimitPercent = 80

    public init() {}

}

extension PowerConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.bool("enabled", \.enabled),
         .string("sysfs_path", \.sysfsPath) { path in
             path.hasPrefix("/") ? nil : "\"\(path)\" is not an absolute path: leave it out for /sys/class/power_supply"
         },
         .int("battery_upload_factor", \.batteryUploadFactor, range: 1...20),
         .int("low_battery_percent", \.lowBatteryPercent, range: 0...99, unit: "percent"),
         .int("queue_near_limit_percent", \.queueNearLimitPercent, range: 10...100, unit: "percent")]
    }
}
