import Foundation

/// Which Opus bit rate each 20 ms frame of a chunk is encoded at: the full rate
/// (`[microphone] bitrate`) while there is sound, the quiet rate (`quiet_bitrate`) while
/// the room is quiet, so a quiet room costs less without a second of audio dropped.
///
/// A frame is *above* when its level (in dBFS: the speech band's level of the frame's
/// quieter half, `SpeechBandMeter`, so that a room's rumble and a key's click hardly move it) is
/// at or above both `thresholdDB` (below it nothing is sound) and the room's floor
/// (`RoomFloor`, learnt from the frames before the block) plus `marginDB` plus twice the
/// room's own spread (at most `spreadCapDB`): a room whose level moves by several dB from
/// frame to frame needs more than a fixed margin. Above frames are *sound* when they make a
/// run of at least `minimumRunFrames` (60 ms: a key's click is shorter, a syllable is not;
/// one frame under the level between two above does not end a run), or when their run
/// reaches the end of the block and so may go on (at the full rate, but starting the hold
/// only once the next block shows it long enough). A shorter run stays at the quiet rate,
/// unless it comes just before a sound run (the first 40 ms of a soft syllable): the
/// look-ahead then reaches back from it. A frame is encoded at the full rate when a sound
/// frame lies within `lookAheadFrames` after it (the frames of a block are all read before any is encoded, so
/// the start of speech is never coded at the quiet rate) or within `holdFrames` before it
/// (the pauses between words stay at the full rate); at the quiet rate otherwise. The
/// look-ahead sees only the frames handed over together (one capture block, 2 s): a frame is
/// never held back waiting for the next block, which would leave it out of the audio
/// journal. The hold and the floor carry across blocks, and across chunks
/// (`BitratePlanCarry`). docs/streams/microphone.md, "Adaptive bit rate".
public struct BitratePlan: Sendable {
    public struct Settings: Sendable, Equatable {
        /// The rate for sound (`[microphone] bitrate`).
        public var soundBitrate: Int
        /// The rate for quiet frames (`quiet_bitrate`); equal to `soundBitrate`, the plan is off.
        public var quietBitrate: Int
        /// A frame below this level (dBFS) is never sound (`sound_threshold_db`).
        public var thresholdDB: Double
        /// How far above the room's floor a frame must be, before the room's own spread
        /// is added (`sound_margin_db`).
        public var marginDB: Double
        /// Frames before a sound frame that are already at the full rate.
        public var lookAheadFrames: Int
        /// Frames after the last sound frame that stay at the full rate.
        public var holdFrames: Int

        public init(soundBitrate: Int, quietBitrate: Int, thresholdDB: Double, marginDB: Double = BitratePlan.defaultMarginDB,
                    lookAheadFrames: Int = BitratePlan.defaultLookAheadFrames, holdFrames: Int = BitratePlan.defaultHoldFrames) {
            self.soundBitrate = soundBitrate
            self.quietBitrate = quietBitrate
            self.thresholdDB = thresholdDB
            self.marginDB = marginDB
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

    /// Over the floor, before the spread: small enough that faint speech over a room as
    /// loud as itself rises over it (docs/streams/microphone.md, "Adaptive bit rate").
    public static let defaultMarginDB = 3.0
    /// The room's spread (median above floor) counts twice: a frame of the room's own noise
    /// rarely rises more than twice that over the median.
    public static let spreadFactor = 2.0
    /// The most the spread adds: a long spell of speech puts its own level in the median,
    /// and the margin must stay under speech's level.
    public static let spreadCapDB = 8.0
    /// 3 frames, 60 ms: shorter than a syllable, longer than a key's click.
    public static let minimumRunFrames = 3

    public let settings: Settings
    /// Frames since the last sound frame of the blocks already planned; nil before any.
    private var framesSinceSound: Int?
    /// Above frames at the end of the last block: a run that may go on in this one.
    private var openRun = 0
    public private(set) var room = RoomFloor()
    /// The frames that were under the level when they came: the room's own, whose spread
    /// is the room's. Speech longer than the window does not widen it (it would raise the
    /// level over faint speech's own); a room that gets louder for good does, once its new
    /// level is in `room`'s floor.
    private var roomAlone = RoomFloor()

    public init(_ settings: Settings) {
        self.settings = settings
    }

    /// The level from which a frame is above, from what the room has been so far.
    public var soundLevel: Double {
        // Until the room's own frames are enough (a room louder than the threshold has none
        // before its floor is known), the spread of all frames.
        guard let floor = room.floor, let spread = roomAlone.spread ?? room.spread else { return settings.thresholdDB }
        let margin = settings.marginDB + min(Self.spreadCapDB, Self.spreadFactor * max(0, spread))
        return max(settings.thresholdDB, floor + margin)
    }

    /// The rate of each frame of the next frames handed over together, from their levels
    /// (dBFS), in order.
    public mutating func rates(forLevels levels: [Double]) -> [Int] {
        let level = soundLevel
        // A single frame under the level between two above it does not end a run: the
        // energy of a syllable dips for a frame.
        let loud = levels.map { $0 >= level }
        let above = loud.indices.map { i in
            loud[i] || (i > 0 && i + 1 < loud.count && loud[i - 1] && loud[i + 1])
        }
        // Which frames are sound, and which of them start the hold (not a run that may
        // still turn out to be a click).
        var sound = [Bool](repeating: false, count: levels.count)
        var holds = [Bool](repeating: false, count: levels.count)
        // Shorter runs: a click, or the first 40 ms of a soft syllable (see the look-ahead).
        var brief = [Bool](repeating: false, count: levels.count)
        var start = 0
        while start < levels.count {
            guard above[start] else { start += 1; continue }
            var end = start
            while end < levels.count, above[end] { end += 1 }
            let length = end - start + (start == 0 ? openRun : 0)
            let long = length >= Self.minimumRunFrames
            for index in start ..< end {
                if long || end == levels.count {
                    sound[index] = true
                    holds[index] = long
                } else {
                    brief[index] = true
                }
            }
            start = end
        }
        let trailing = above.reversed().prefix { $0 }.count
        openRun = trailing + (trailing == levels.count ? openRun : 0)

        var rates = [Int](repeating: settings.quietBitrate, count: levels.count)
        // Walked backwards: the distance to the next sound frame within these frames.
        var untilSound: Int?
        for index in levels.indices.reversed() {
            // A short rise just before sound (the first 40 ms of a soft syllable) is part of
            // it: the look-ahead reaches back from it too.
            let leadsIn = brief[index] && (untilSound.map { $0 < settings.lookAheadFrames + 1 } ?? false)
            if sound[index] || leadsIn { untilSound = 0 } else { untilSound = untilSound.map { $0 + 1 } }
            if let untilSound, untilSound <= settings.lookAheadFrames { rates[index] = settings.soundBitrate }
        }
        for index in levels.indices {
            if holds[index] {
                framesSinceSound = 0
            } else if let since = framesSinceSound {
                framesSinceSound = since + 1
            }
            if let since = framesSinceSound, since <= settings.holdFrames { rates[index] = settings.soundBitrate }
        }
        room.add(levels)
        roomAlone.add(levels.filter { $0 < level })
        return rates
    }
}

/// The plan handed from one chunk's encoder to the next: the room's floor, the hold and
/// the speech band's filter go on across chunks (a new chunk does not learn the room again). Capture thread only,
/// like the encoders that share it; it holds no audio, so each chunk still decodes on its own.
public final class BitratePlanCarry {
    /// The plan as the last encoder left it; nil before any.
    public var plan: BitratePlan?
    /// The speech band's filter as the last encoder left it, so that a new chunk's first
    /// frames are measured as the stream's, not as a filter's start.
    public var meter: SpeechBandMeter?

    public init() {}
}
