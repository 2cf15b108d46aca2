import Foundation

/// A capture device made of the ALSA `file` plugin: a PCM whose samples are read from a
/// raw 16 kHz S16_LE mono file, over the `null` PCM, so real libasound capture runs with
/// no sound card.
///
/// The PCM is defined in a config file that first includes the system `alsa.conf` (because
/// `ALSA_CONFIG_PATH` replaces the whole configuration search) and `ALSA_CONFIG_PATH` is
/// pointed at it; the previous value is put back when the rig goes, so later tests see the
/// normal configuration. The environment is process-wide: use one rig at a time.
///
/// Several devices can be defined at once, each over its own input and listed in ALSA's
/// device hints (`arecord -L`) with `description(of:)`: `unplug` takes a
/// device's input away (opening the device then fails with ENOENT, as for a USB microphone
/// that is not there) and `plugIn` puts it back.
///
/// The plugin does not pace reads (capture runs as fast as the reader) and past the end
/// of `infile` it leaves the read buffer untouched, so inputs must be longer than a test
/// reads and readers must clear their buffers.
public final class ALSARig: @unchecked Sendable {
    // @unchecked: immutable after init apart from the environment, which init/deinit set.
    public static let systemConfig = "/usr/share/alsa/alsa.conf"

    public let directory: TemporaryDirectory
    /// The PCM name to open (`snd_pcm_open`, `arecord -D`): the first device.
    public let device: String
    public let configPath: String
    /// The raw input the first PCM reads; it need not exist yet (a device that appears later).
    public let inputPath: String
    /// Every device's input, by PCM name.
    public let inputs: [String: String]
    private let previousConfigPath: String?

    public convenience init(input: String, device: String = "ariata_test_mic") throws {
        try self.init(devices: [(device, input)])
    }

    /// `devices`: PCM names and the raw input each reads.
    public init(devices: [(name: String, input: String)]) throws {
        guard FileManager.default.fileExists(atPath: Self.systemConfig) else {
            throw NotInstalled(program: "alsa (\(Self.systemConfig))")
        }
        guard let first = devices.first else { throw RigFailure("ALSARig: no device to define") }
        directory = try TemporaryDirectory("ariata-alsa")
        device = first.name
        inputPath = first.input
        inputs = Dictionary(devices.map { ($0.name, $0.input) }) { $1 }
        configPath = directory.file("asound.conf")
        let definitions = devices.map { device in
            """
            pcm.\(device.name) {
                type file
                slave.pcm "null"
                file "/dev/null"
                infile "\(device.input)"
                format "raw"
                hint { show on description "\(Self.description(of: device.name))" }
            }

            """
        }
        let text = "<\(Self.systemConfig)>\n" + definitions.joined()
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
        previousConfigPath = ProcessInfo.processInfo.environment["ALSA_CONFIG_PATH"]
        setenv("ALSA_CONFIG_PATH", configPath, 1)
    }

    /// The readable name ALSA's device hints give a rig device (`arecord -L`).
    public static func description(of device: String) -> String { "Test microphone \(device)" }

    /// Whether `device`'s input is there (it opens).
    public func isPlugged(_ device: String) -> Bool {
        inputs[device].map { FileManager.default.fileExists(atPath: $0) } ?? false
    }

    /// Takes `device`'s input away (kept beside it): opening the device fails with ENOENT.
    public func unplug(_ device: String) throws {
        guard let input = inputs[device] else { throw RigFailure("ALSARig: no device \(device)") }
        guard rename(input, input + ".unplugged") == 0 else { throw RigFailure("ALSARig: cannot unplug \(device): \(String(cString: strerror(errno)))") }
    }

    /// Puts back the input `unplug` took away.
    public func plugIn(_ device: String) throws {
        guard let input = inputs[device] else { throw RigFailure("ALSARig: no device \(device)") }
        guard rename(input + ".unplugged", input) == 0 else { throw RigFailure("ALSARig: cannot plug \(device) in: \(String(cString: strerror(errno)))") }
    }

    deinit {
        if let previousConfigPath {
            setenv("ALSA_CONFIG_PATH", previousConfigPath, 1)
        } else {
            unsetenv("ALSA_CONFIG_PATH")
        }
    }
}

/// Speech for audio tests: espeak-ng reads a fixed text (about two minutes), sox turns it
/// into raw 16 kHz S16_LE mono, and the audio is repeated to the length asked for.
public enum SpeechInput {
    public static let sampleRate = 16_000

    /// A raw speech file of at least `seconds` in `directory`.
    public static func make(seconds: Double, in directory: String, name: String = "speech.raw") throws -> String {
        let wav = "\(directory)/speech-\(UUID().uuidString.prefix(8)).wav"
        let text = "\(directory)/speech-text.txt"
        try passage.write(toFile: text, atomically: true, encoding: .utf8)
        try run("espeak-ng", ["-s", "165", "-f", text, "-w", wav], logDirectory: directory)
        let once = "\(directory)/speech-once.raw"
        try run("sox", [wav, "-r", "\(sampleRate)", "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", once],
                logDirectory: directory)
        let passageData = try Data(contentsOf: URL(fileURLWithPath: once))
        guard !passageData.isEmpty else { throw SpeechInputError(message: "espeak-ng and sox produced no audio") }
        let wanted = Int((seconds * Double(sampleRate)).rounded(.up)) * 2
        var output = Data(capacity: wanted)
        while output.count < wanted { output.append(passageData) }
        let path = "\(directory)/\(name)"
        // Atomic, so a device that appears later never shows a half-written input.
        try output.write(to: URL(fileURLWithPath: path), options: .atomic)
        try? FileManager.default.removeItem(atPath: wav)
        try? FileManager.default.removeItem(atPath: once)
        return path
    }

    /// Reads a raw S16_LE file as samples.
    public static func samples(ofRawFile path: String) throws -> [Int16] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { raw in
            (0 ..< data.count / 2).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self)) }
        }
    }

    private static func run(_ program: String, _ arguments: [String], logDirectory: String) throws {
        let child = try ChildProcess(program, arguments, logDirectory: logDirectory)
        guard let status = child.wait(timeout: 60) else {
            child.stop()
            throw SpeechInputError(message: "\(program) did not finish in 60 s")
        }
        guard status == 0 else {
            throw SpeechInputError(message: "\(program) \(arguments.joined(separator: " ")) failed (\(status)): \(child.stderr())")
        }
    }

    /// An original text with varied words, so that two different stretches of the audio
    /// never look alike (the overlap test relies on that).
    static let passage = """
        The morning train left the station a few minutes late, and nobody on the platform seemed surprised. \
        A woman in a green coat checked her watch twice, then opened a paperback about lighthouses along the northern coast. \
        Two students argued quietly about whether the library would open before nine, and a man with a bicycle tried to find \
        a corner where it would not block the doors.
        Outside the windows the fields were still grey with frost. Every few kilometres a farmhouse appeared, its chimney \
        sending a thin line of smoke into the pale sky. The conductor walked slowly through the carriage, punching tickets \
        and answering the same three questions he answered every day: when the train would arrive, whether the cafe car \
        was open, and which side the doors would open on.
        Halfway through the journey the train stopped between two villages. A voice over the speakers apologised for the \
        delay and explained that a signal ahead had failed. People sighed, made phone calls, and looked out at a heron \
        standing perfectly still in a ditch full of water. After twenty minutes the carriage jerked forward, and the heron \
        lifted itself into the air with long, unhurried beats of its wings.
        By the time the city came into view, the frost had melted and the sun had found a gap in the clouds. The woman in \
        the green coat closed her book, the students had agreed to disagree, and the man with the bicycle was first at the \
        door. The train slid into the station, the doors opened on the left, and everyone stepped out into a day that had \
        already started without them.
        Later that evening, the same train made the return trip almost empty. A cleaner moved from seat to seat collecting \
        newspapers and paper cups, humming a song from the radio. The conductor counted the tickets he had punched, wrote a \
        number in a small notebook, and watched the lights of the suburbs give way to the dark shapes of hills. Somewhere \
        near the second village, the heron was back in its ditch, waiting patiently for something only it could see.
        """
}

public struct SpeechInputError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
