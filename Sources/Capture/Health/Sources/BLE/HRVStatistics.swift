import Foundation

/// Time-domain heart-rate variability of one window of RR intervals, after artefacts are
/// taken out (`RRArtefactFilter`): SDNN, the standard deviation of the clean intervals
/// (the contract's `heart_rate_variability`, as the iOS collector sends HealthKit's), and
/// RMSSD, the root mean square of the differences between successive clean intervals
/// (only pairs of beats that followed each other: no difference spans an artefact or a
/// gap). Both in ms (docs/streams/health.md#heart-rate-variability).
public struct HRVStatistics: Sendable, Equatable {
    /// Standard deviation with n − 1 (the sample's, as Kubios computes it).
    public var sdnn: Double
    public var rmssd: Double
    public var cleanIntervals: Int
    public var rejectedIntervals: Int
    /// Seconds of the window the clean intervals cover.
    public var cleanSeconds: Double

    /// Why a window gives no figure.
    public enum Insufficient: Error, Equatable, CustomStringConvertible {
        case tooFewBeats(clean: Int)
        case tooLittleCovered(cleanSeconds: Double, needed: Double)
        case tooManyArtefacts(rejected: Int, of: Int)

        public var description: String {
            switch self {
            case .tooFewBeats(let clean): return "only \(clean) clean beat intervals"
            case .tooLittleCovered(let covered, let needed):
                return "clean beats cover \(Int(covered)) s of the window, \(Int(needed)) s are needed"
            case .tooManyArtefacts(let rejected, let all): return "\(rejected) of \(all) beat intervals were artefacts"
            }
        }
    }

    /// When a window's figures are worth sending: the clean intervals cover at least
    /// `minimumCoverage` of the window (half), no more than `maximumRejected` of the
    /// intervals received (a fifth) were artefacts, and there are at least
    /// `minimumIntervals` clean ones with two successive pairs.
    public struct Rule: Sendable, Equatable {
        public var minimumCoverage = 0.5
        public var maximumRejected = 0.2
        public var minimumIntervals = 3
        public var filter = RRArtefactFilter()

        public init() {}
    }

    /// The figures of a window `windowSeconds` long, or why there are none.
    public static func compute(_ intervals: [RRInterval], windowSeconds: Double,
                               rule: Rule = Rule()) -> Result<HRVStatistics, Insufficient> {
        let flags = rule.filter.clean(intervals)
        let clean = zip(intervals, flags).filter(\.1).map(\.0.milliseconds)
        let rejected = intervals.count - clean.count
        let cleanSeconds = clean.reduce(0, +) / 1000
        var differences: [Double] = []
        for i in intervals.indices.dropFirst() where flags[i] && flags[i - 1] && intervals[i].followsPrevious {
            differences.append(intervals[i].milliseconds - intervals[i - 1].milliseconds)
        }
        guard Double(rejected) <= rule.maximumRejected * Double(intervals.count) else {
            return .failure(.tooManyArtefacts(rejected: rejected, of: intervals.count))
        }
        guard clean.count >= rule.minimumIntervals, differences.count >= 2 else { return .failure(.tooFewBeats(clean: clean.count)) }
        let needed = rule.minimumCoverage * windowSeconds
        guard cleanSeconds >= needed else { return .failure(.tooLittleCovered(cleanSeconds: cleanSeconds, needed: needed)) }
        let mean = clean.reduce(0, +) / Double(clean.count)
        let sdnn = (clean.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(clean.count - 1)).squareRoot()
        let rmssd = (differences.reduce(0) { $0 + $1 * $1 } / Double(differences.count)).squareRoot()
        return .success(HRVStatistics(sdnn: sdnn, rmssd: rmssd, cleanIntervals: clean.count, rejectedIntervals: rejected,
                                      cleanSeconds: cleanSeconds))
    }
}
