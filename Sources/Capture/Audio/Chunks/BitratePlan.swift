import Foundation

/// Which Opus bit rate each 20 ms frame of a chunk is encoded at: the full rate
/// (`[microphone] bitrate`) while there is sound, the quiet rate (`quiet_bitrate`) while
/// the room is quiet, so a quiet room costs less without a second of audio dropped.
///
/// A frame is *sound* when its level (RMS in dBFS, the measure of `average_db_level`) is
/// at or above `thresholdDB`. A frame is encoded at the full rate when a sound frame lies
/// within `lookAheadFrames` after it (the frames of a block are all read before any is
/// encoded, so the start of speech is never coded at the quiet rate) or within
/// `holdFrames` before it (the pauses between words stay at the full rate); at the quiet
/// rate otherwise. The look-ahead sees only the frames handed over together (one capture
/// block, 2 s): a frame is never held back waiting for the next block, which would leave
/// it out of the audio journal. The hold carries across blocks.
/// docs/streams/microphone.md, "Adaptive bit rate".
public struct BitratePlan: Sendable {
    public struct Settings: Sendable, Equatable {
        /// The rate for sound (`[microphone] bitrate`).
        public var soundBitrate: Int
        /// The rate for quiet frames (`quiet_bitrate`); equal to `soundBitrate`, the plan is off.
        public var quietBitrate: Int
        /// A frame at or above this level (dBFS) is sound (`sound_threshold_db`).
        public var thresholdDB: Double
        /// Frames before a sound frame that are already at the full rate.
        public var lookAheadFrames: Int
        /// Frames after the last sound frame that stay at the full rate.
        public var holdFrames: Int

        public init(soundBitrate: Int, quietBitrate: Int, thresholdDB: Double,
                    lookAheadFrames: Int = BitratePlan.defaultLookAheadFrames, holdFrames: Int = BitratePlan.defaultHoldFrames) {
            self.soundBitrate = soundBitrate
            self.quietBitrate = quietBitrate
            self.thresholdDB = thresholdDB
            self.lookAheadFrames = max(0, lookAheadFrames)
            self.holdFrames = max(0, holdFrames)
        }

        /// Whether quiet frames get a lower rate at all.
        public var isAdaptive: Bool { quietBitrate < soundBitrate }
    }

    /// 10 frames, 200 ms: more than the few milliseconds of libopusenc's resampler and the
    /// encoder's own look-ahead, and room for a soft first syllable that starts under the
    /// threshold.
    public static let defaultLookAheadFrames = 10
    /// 100 frames, 2 s: longer than the pauses inside a sentence.
    public static let defaultHoldFrames = 100

    public let settings: Settings
    /// Frames since the last sound frame of the blocks already planned; nil before any.
    private var framesSinceSound: Int?

    public init(_ settings: Settings) {
        self.settings = settings
    }

    /// The rate of each frame of the next frames handed over together, from their levels
    /// (dBFS), in order.
    public mutating func rates(forLevels levels: [Double]) -> [Int] {
        let sound = levels.map { $0 >= settings.thresholdDB }
        var rates = [Int](repeating: settings.quietBitrate, count: levels.count)
        // Walked backwards: the distance to the next sound frame within these frames.
        var untilSound: Int?
        for index in levels.indices.reversed() {
            if sound[index] { untilSound = 0 } else { untilSound = untilSound.map { $0 + 1 } }
            if let untilSound, untilSound <= settings.lookAheadFrames { rates[index] = settings.soundBitrate }
        }
        for index in levels.indices {
            if sound[index] {
                framesSinceSound = 0
            } else if let since = framesSinceSound {
                framesSinceSound = since + 1
            }
            if let since = framesSinceSound, since <= settings.holdFrames { rates[index] = settings.soundBitrate }
        }
        return rates
    }
}
