import AgentCore
import Foundation

/// Decides which sampled fixes of a receiver that does not move are worth a record. It
/// watches every fix; it is stationary once the fixes of the last `window` all lie within
/// their own error (`eph`, at least `minimumRadius`) of their mean. While stationary a
/// record is written every `stationaryInterval` (by the fixes' own times); the first fix
/// that leaves ends the state and is written at once. `minDistance` (0: off) keeps any
/// fix nearer than that to the last record from being written. Records are only ever
/// dropped, never changed, so the servers see fewer records, not different ones.
struct StationaryFilter: Sendable {
    /// Seconds between records while stationary; nil turns the stationary state off.
    let stationaryInterval: TimeInterval?
    let minDistance: Double
    let window: TimeInterval
    let minimumRadius: Double

    /// Fixes of the last `window`, oldest first, and the newest one older than that, so
    /// the window is known to be covered.
    private var recent: [LocationFix] = []
    /// The mean position while stationary.
    private(set) var anchor: (latitude: Double, longitude: Double)?
    private var lastPassed: LocationFix?

    enum Decision: Sendable, Equatable {
        case write
        /// Not written: stationary, or nearer than `minDistance` to the last record.
        case thin
    }

    /// - Parameters:
    ///   - interval: the sampling interval; a stationary interval no longer than it
    ///     turns the stationary state off.
    init(interval: Int, stationaryInterval: Int, minDistance: Int, window: TimeInterval, minimumRadius: Double) {
        self.stationaryInterval = stationaryInterval > interval ? TimeInterval(stationaryInterval) : nil
        self.minDistance = Double(minDistance)
        self.window = window
        self.minimumRadius = minimumRadius
    }

    var isStationary: Bool { anchor != nil }

    /// Every fix the source gives. True when it ends the stationary state: it is then to
    /// be written at once, not at the next tick.
    mutating func observe(_ fix: LocationFix) -> Bool {
        guard stationaryInterval != nil else { return false }
        if let last = recent.last, fix.time < last.time {
            // The receiver's time went back: what was seen before says nothing now.
            recent.removeAll()
            anchor = nil
        }
        recent.append(fix)
        let boundary = fix.time.date.addingTimeInterval(-window)
        while recent.count > 1, recent[1].time.date <= boundary {
            recent.removeFirst()
        }
        if let anchor, !within(fix, of: anchor) {
            self.anchor = nil
            return true
        }
        if anchor == nil, let first = recent.first, first.time.date <= boundary, let mean = stillMean() {
            anchor = mean
        }
        return false
    }

    /// Whether the sampled fix is to be written. Does not change the state: `passed`
    /// says when it went through.
    func decide(_ fix: LocationFix) -> Decision {
        guard let last = lastPassed else { return .write }
        if minDistance > 0, distance(fix, last.latitude, last.longitude) < minDistance { return .thin }
        if let stationaryInterval, let anchor, within(fix, of: anchor),
           fix.time.date.timeIntervalSince(last.time.date) < stationaryInterval {
            return .thin
        }
        return .write
    }

    /// A fix `decide` let through, and the stream did not keep back for a retry.
    mutating func passed(_ fix: LocationFix) {
        lastPassed = fix
    }

    /// The mean of the recent fixes, when every one lies within its own error of it.
    private func stillMean() -> (latitude: Double, longitude: Double)? {
        guard let origin = recent.first else { return nil }
        // Offsets in metres from the first fix: a mean of degrees would fail across the
        // antimeridian.
        let offsets = recent.map { local($0.latitude, $0.longitude, from: origin) }
        let north = offsets.map(\.north).reduce(0, +) / Double(offsets.count)
        let east = offsets.map(\.east).reduce(0, +) / Double(offsets.count)
        for (fix, offset) in zip(recent, offsets) {
            let off = ((offset.north - north) * (offset.north - north) + (offset.east - east) * (offset.east - east)).squareRoot()
            if off > radius(of: fix) { return nil }
        }
        let latitude = origin.latitude + north / Self.metresPerDegree
        let cosine = max(cos(origin.latitude * .pi / 180), 1e-9)
        var longitude = origin.longitude + east / (Self.metresPerDegree * cosine)
        if longitude > 180 { longitude -= 360 }
        if longitude < -180 { longitude += 360 }
        return (latitude, longitude)
    }

    private func within(_ fix: LocationFix, of anchor: (latitude: Double, longitude: Double)) -> Bool {
        distance(fix, anchor.latitude, anchor.longitude) <= radius(of: fix)
    }

    private func radius(of fix: LocationFix) -> Double {
        max(fix.horizontalAccuracy ?? minimumRadius, minimumRadius)
    }

    private func distance(_ fix: LocationFix, _ latitude: Double, _ longitude: Double) -> Double {
        Geodesy.distance(fromLatitude: fix.latitude, longitude: fix.longitude, toLatitude: latitude, longitude: longitude)
    }

    private static let metresPerDegree = Geodesy.earthRadius * .pi / 180

    private func local(_ latitude: Double, _ longitude: Double, from origin: LocationFix) -> (north: Double, east: Double) {
        var dλ = longitude - origin.longitude
        if dλ > 180 { dλ -= 360 }
        if dλ < -180 { dλ += 360 }
        return ((latitude - origin.latitude) * Self.metresPerDegree,
                dλ * Self.metresPerDegree * cos(origin.latitude * .pi / 180))
    }
}
