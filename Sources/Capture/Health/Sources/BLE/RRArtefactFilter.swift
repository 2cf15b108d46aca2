/// Marks the RR intervals that are not normal beat-to-beat intervals: a missed beat (one
/// interval about twice the others), an extra beat (one interval split in two), a
/// sensor's glitch. An interval is an artefact when it lies outside `plausible` (300 to
/// 2,000 ms: 200 to 30 bpm), or differs by more than `tolerance` (20 %) from the median of
/// the plausible intervals among its `neighbours` (5) on each side: the 20 % rule of Malik
/// et al. (1989) against a local median rather than the previous beat, so one artefact
/// does not also condemn the beat after it (docs/streams/health.md#heart-rate-variability).
public struct RRArtefactFilter: Sendable, Equatable {
    public var plausible: ClosedRange<Double> = 300...2_000
    public var tolerance = 0.2
    public var neighbours = 5

    public init() {}

    /// One flag per interval: true for a clean one.
    public func clean(_ intervals: [RRInterval]) -> [Bool] {
        let values = intervals.map(\.milliseconds)
        return values.indices.map { i in
            let value = values[i]
            guard plausible.contains(value) else { return false }
            let around = values[max(0, i - neighbours)..<min(values.count, i + neighbours + 1)]
                .enumerated().filter { $0.offset + max(0, i - neighbours) != i && plausible.contains($0.element) }
                .map(\.element)
            guard let median = Self.median(around) else { return true }
            return abs(value - median) <= tolerance * median
        }
    }

    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
