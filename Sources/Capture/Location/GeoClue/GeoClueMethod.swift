import Foundation

/// What GeoClue's `Location.Description` says of how a fix was made.
///
/// GeoClue 2.7 fills it: its web locator writes "WiFi", "3GPP", "3GPP + WiFi" or "GeoIP"
/// for what it sent, and "<fallback> fallback (from … data)" when the locator answered by
/// a fallback ("ipf" the IP address, "lacf" the cell's area); the static source writes
/// "Static location", the CDMA source "CDMA". GeoClue 2.6 (Debian 12) has the property but
/// no source fills it: it is empty. An empty one says nothing, except that a fix at least
/// as coarse as GeoClue's own city-level accuracy (15 km) is taken as an IP-address lookup,
/// marked as inferred (docs/laptop.md).
enum GeoClueMethod {
    /// GeoClue's `GCLUE_LOCATION_ACCURACY_CITY`: what its IP lookups come to.
    static let ipAccuracy = 15_000.0

    static func method(description: String?, accuracy: Double?) -> LocationMethod? {
        let text = (description ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        if let kind = kind(of: text) { return LocationMethod(kind, basis: .description) }
        if let accuracy, accuracy >= ipAccuracy { return LocationMethod(.ip, basis: .accuracy) }
        return nil
    }

    private static func kind(of text: String) -> LocationMethod.Kind? {
        guard !text.isEmpty else { return nil }
        // A fallback names what the locator answered by, whatever was sent.
        if text.hasPrefix("ipf fallback") { return .ip }
        if text.hasPrefix("lacf fallback") { return .cell }
        if text.contains("fallback") { return nil }
        if text.contains("wifi") { return .wifi }
        if text.contains("geoip") { return .ip }
        if text.contains("3gpp") || text.contains("cdma") { return .cell }
        if text.hasPrefix("static") { return .static }
        if text.contains("gps") || text.contains("gnss") || text.contains("nmea") { return .gnss }
        return nil
    }
}
