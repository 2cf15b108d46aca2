import Foundation

/// `[microphone]`: ALSA capture, Opus encoding, chunking.
public struct MicrophoneConfig: Sendable, Equatable {
    public var enabled: Bool = true
    /// ALSA PCM name (`default`, `hw:1,0`, `plughw:CARD=Mic`, ...).
    public var device: String = "default"
    /// Captured from while `device` is missing (unplugged); `""` or `"none"` turns the
    /// fallback off (docs/streams/microphone.md, "Choosing the device, and falling back").
    public var fallbackDevice: String = "default"
    /// Opus bit rate in bits per second: the rate for sound.
    public var bitrate: Int = 16_000
    /// The Opus bit rate while the room is quiet (no 20 ms frame of sound for 2 s); equal
    /// to `bitrate`, the rate never changes
    /// (docs/streams/microphone.md, "Adaptive bit rate"). 5000, not 6000: measured, it is
    /// what brings a day 80 % quiet under 100 MB on the wire.
    public var quietBitrate: Int = 5_000
    /// What a quiet stretch is sent as once the chunk has coded the room
    /// (docs/decisions/0018-a-quiet-room-sent-as-comfort-noise.md).
    public var quietRoom: QuietRoom = .comfortNoise
    /// A 20 ms frame whose speech band's level (`SpeechBandMeter`, dBFS) is below this is
    /// never sound. -55 keeps speech far from the microphone (about -51 dBFS) within reach
    /// while a quiet room, and a distant car's rumble, cost the quiet rate.
    public var soundThresholdDB: Int = -55
    /// How far (dB) above the room's own noise floor a frame must rise to be sound, before
    /// the room's own spread is added (docs/streams/microphone.md, "Adaptive bit rate").
    public var soundMarginDB: Int = 3
    /// Seconds of audio per chunk. Setting it (in the file or in code) makes it explicit.
    public var chunkSeconds: Int = 30 { didSet { chunkSecondsIsExplicit = true } }
    /// Whether the file sets `chunk_seconds`: only then does onboarding keep it instead of
    /// proposing the server's length (docs/streams/microphone.md, "Chunk length per server").
    public var chunkSecondsIsExplicit = false
    public var overlapSeconds: Int = 2
    /// libopus encoder complexity, 0 (least CPU) to 10 (libopus's and opusenc's default):
    /// docs/performance.md has what each level costs and saves.
    public var complexity: Int = 10
    /// How long encoded audio may wait in the audio journal before it is fdatasync'ed: what
    /// a power cut can cost at most (a kill costs nothing: the pages are written at once).
    /// Each sync makes the next write dirty a page again, so shorter costs card writes.
    public var journalSyncSeconds: Int = 10
    /// A chunk whose mean level (dBFS) is below this is silent (`is_silent` in its record).
    public var silenceThresholdDB: Int = -50
    /// false drops silent chunks at capture: never stored, counted in `status`
    /// (docs/streams/microphone.md, "Loudness and silence").
    public var uploadSilent: Bool = true
    /// `[[microphone.quiet]]`: when the microphone does not capture (docs/streams/microphone.md,
    /// "Quiet hours and muted places").
    public var quiet: [QuietHours] = []
    /// Seconds a fix inside a zone with `microphone = "mute"` keeps the microphone muted
    /// when no newer fix comes (the location stream off, no fix indoors): the person's
    /// intent holds for a while, not for ever.
    public var mutedPlaceFixAge: Int = 1_800

    public init() {}

    /// The device to capture from while `device` is missing; nil when the fallback is off
    /// or names the chosen device itself.
    public var fallback: String? {
        let name = fallbackDevice.trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.lowercased() != "none", name != device else { return nil }
        return name
    }
}

extension MicrophoneConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.bool("enabled", \.enabled),
         .string("device", \.device),
         .string("fallback_device", \.fallbackDevice),
         .int("bitrate", \.bitrate, range: 6_000...128_000, unit: "bits per second"),
         .int("quiet_bitrate", \.quietBitrate, range: 2_000...128_000, unit: "bits per second"),
         .choice("quiet_room", \.quietRoom, allowed: QuietRoom.allCases),
         .int("sound_threshold_db", \.soundThresholdDB, range: -100...0, unit: "dBFS of the speech band (0 is full scale, -55 quiet speech far away)"),
         .int("sound_margin_db", \.soundMarginDB, range: 0...40, unit: "dB above the room's noise floor"),
         // Read and written only when given, so that a default leaves room for onboarding's
         // proposal (and stays the default after a rewrite).
         ConfigKey("chunk_seconds", read: { s, t in
             let value = try s.int("chunk_seconds", default: t.chunkSeconds, range: 5...600, unit: "seconds")
             if s.contains("chunk_seconds") { t.chunkSeconds = value }
         }, write: { $0.chunkSecondsIsExplicit ? $0.chunkSeconds : nil }),
         .int("overlap_seconds", \.overlapSeconds, range: 0...60, unit: "seconds"),
         .int("complexity", \.complexity, range: 0...10),
         .int("journal_sync_seconds", \.journalSyncSeconds, range: 1...60, unit: "seconds"),
         .int("silence_threshold_db", \.silenceThresholdDB, range: -100...0, unit: "dBFS (0 is full scale, -50 quiet)"),
         .bool("upload_silent", \.uploadSilent),
         .int("muted_place_fix_age", \.mutedPlaceFixAge, range: 60...86_400, unit: "seconds"),
         .tables("quiet", \.quiet)]
    }

    func validate(_ s: ConfigSection) throws {
        guard quietBitrate <= bitrate else {
            throw s.error("quiet_bitrate", "\(quietBitrate) must not be above bitrate (\(bitrate)); equal turns the adaptive rate off")
        }
        guard overlapSeconds < chunkSeconds else {
            throw s.error("overlap_seconds", "\(overlapSeconds) must be shorter than chunk_seconds (\(chunkSeconds))")
        }
    }
}

/// `[microphone] quiet_room`: how the frames at the quiet rate are sent.
public enum QuietRoom: String, Sendable, Equatable, CaseIterable {
    /// Not coded: packets the decoder fills with comfort noise shaped like the room it
    /// last decoded (the chunk codes its first frames, and the hold after sound, as usual).
    case comfortNoise = "comfort-noise"
    /// Coded at `quiet_bitrate`, 20 ms frame by 20 ms frame.
    case coded
}

/// `[[microphone.quiet]]`.
extension QuietHours: ConfigTable {
    /// `from` and `to` have no default: reading fails when they are not given.
    static var defaults: Self { Self(from: .midnight, to: .midnight) }
    static var keys: [ConfigKey<Self>] {
        [ConfigKey("days", read: { s, t in
             let text = try s.string("days", default: t.days.text)
             guard let days = Weekdays(text) else { throw s.error("days", "\"\(text)\" is not a list of days: write \(Weekdays.expected)") }
             t.days = days
         }, write: { $0.days.isEveryDay && $0.days.text == Weekdays.everyDay.text ? nil : $0.days.text }),
         time("from", \.from),
         time("to", \.to)]
    }

    private static func time(_ name: String, _ field: WritableKeyPath<Self, TimeOfDay>) -> ConfigKey<Self> {
        ConfigKey(name, read: { s, t in
            guard let text = try s.optionalString(name) else { throw s.error(name, "missing: give \(TimeOfDay.expected)") }
            guard let time = TimeOfDay(text) else { throw s.error(name, "\"\(text)\" is not a time: write \(TimeOfDay.expected)") }
            t[keyPath: field] = time
        }, write: { $0[keyPath: field].description })
    }
}
