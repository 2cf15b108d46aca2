import Foundation

/// The mean level of a run of 16-bit samples, gathered as they flow to the encoder (no
/// second pass over the audio): the RMS of the samples relative to full scale (32768, so
/// a full-scale square wave is 0 dBFS and a full-scale sine -3.0), in dB. Digital silence
/// (every sample 0) reads as `floor`. docs/streams/microphone.md, "Loudness and silence".
public struct AudioLevel: Sendable, Equatable {
    /// What digital silence reads as: below any level a sample can make (one LSB of
    /// noise is -90.3 dBFS).
    public static let floor: Double = -100

    /// Sum of the squared samples: at most 2^30 each, so 2^34 samples (a week at 16 kHz)
    /// before it could overflow; a chunk holds minutes at most.
    public private(set) var sumOfSquares: UInt64 = 0
    public private(set) var samples = 0
    /// The largest magnitude of any sample (32768 for -32768).
    public private(set) var peakMagnitude: Int32 = 0

    public init() {}

    public mutating func add(_ buffer: UnsafeBufferPointer<Int16>) {
        var sum: UInt64 = 0
        var peak = peakMagnitude
        for sample in buffer {
            let v = Int32(sample)
            sum &+= UInt64(v * v)
            peak = max(peak, abs(v))
        }
        sumOfSquares &+= sum
        peakMagnitude = peak
        samples += buffer.count
    }

    /// Adds the samples another level was gathered from (a block shared by two chunks
    /// during an overlap is summed once).
    public mutating func add(_ other: AudioLevel) {
        sumOfSquares &+= other.sumOfSquares
        samples += other.samples
        peakMagnitude = max(peakMagnitude, other.peakMagnitude)
    }

    /// The peak in dBFS (the largest sample's magnitude against full scale), `floor` for
    /// digital silence, to 0.1 dB as a record carries it (`peak_db_level`).
    public var reportedPeak: Double {
        guard peakMagnitude > 0 else { return Self.floor }
        let db = max(Self.floor, 20 * log10(Double(peakMagnitude) / 32_768.0))
        return (db * 10).rounded() / 10
    }

    /// The level in dBFS, `floor` for digital silence or no samples.
    public var dbfs: Double {
        guard samples > 0 else { return Self.floor }
        return Self.dbfs(meanSquare: Double(sumOfSquares) / Double(samples))
    }

    /// A mean square of 16-bit samples in dBFS, `floor` for 0 (digital silence).
    public static func dbfs(meanSquare: Double) -> Double {
        guard meanSquare > 0 else { return floor }
        return max(floor, 10 * log10(meanSquare / (32_768.0 * 32_768.0)))
    }

    /// The level as a record carries it: to 0.1 dB.
    public var reported: Double { (dbfs * 10).rounded() / 10 }

    /// Silent when the reported level is below `thresholdDB` (`[microphone]
    /// silence_threshold_db`), so a record's `is_silent` always agrees with its
    /// `average_db_level`.
    public func isSilent(thresholdDB: Int) -> Bool { reported < Double(thresholdDB) }
}
