import Foundation

/// A desktop sound server: PipeWire (with its PulseAudio stand-in, pipewire-pulse) or
/// PulseAudio. Where one runs it owns the sound cards, and capture goes through it
/// (ALSA's `default`, `pipewire` or `pulse` device) rather than to a card
/// (docs/streams/microphone.md, "Sound servers").
public enum SoundServer: String, Sendable, CaseIterable {
    case pipewire = "PipeWire"
    case pulseaudio = "PulseAudio"

    /// The socket of a session of this server, relative to the user's runtime directory.
    var socket: String {
        switch self {
        case .pipewire: return "pipewire-0"
        case .pulseaudio: return "pulse/native"
        }
    }

    /// The process names (`/proc/PID/comm`) of this server's daemons.
    var processNames: Set<String> {
        switch self {
        case .pipewire: return ["pipewire", "wireplumber", "pipewire-media-session"]
        case .pulseaudio: return ["pulseaudio"]
        }
    }
}

/// A sound-server session a user's programs can reach: its socket in the user's runtime
/// directory (`$XDG_RUNTIME_DIR`, `/run/user/UID`).
public struct SoundServerSession: Sendable, Equatable {
    public var server: SoundServer
    /// The socket's path.
    public var socket: String

    /// The sessions whose sockets are in `runtimeDirectory`, PipeWire first.
    public static func find(runtimeDirectory: String) -> [SoundServerSession] {
        SoundServer.allCases.compactMap { server in
            let path = (runtimeDirectory as NSString).appendingPathComponent(server.socket)
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return nil }
            return SoundServerSession(server: server, socket: path)
        }
    }

    /// The runtime directory of user `uid`: `$XDG_RUNTIME_DIR` for ourselves, else
    /// systemd-logind's `/run/user/UID`.
    public static func runtimeDirectory(uid: uid_t, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if uid == getuid(), let own = environment["XDG_RUNTIME_DIR"], !own.isEmpty { return own }
        return "/run/user/\(uid)"
    }
}

/// Is a capture device one that opens a sound card directly, and does a sound server
/// manage that card? Opening it would take the card from the sound server (the person's
/// calls lose their microphone) or fail whenever the server holds it (EBUSY).
public struct SoundCardGuard: Sendable {
    /// Where `asound/` (the cards) and the processes are read: `/proc`, or a test's copy.
    public var procRoot: String

    public init(procRoot: String = "/proc") {
        self.procRoot = procRoot
    }

    /// The ALSA PCM types that open a card's hardware themselves (`hw:0`,
    /// `plughw:CARD=Mic,DEV=0`, `dsnoop:1`, `sysdefault:0`, `front:0`).
    static let cardPlugins: Set<String> = ["hw", "plughw", "dsnoop", "sysdefault", "front"]

    /// The card a device name opens directly ("0" or the card's id), or nil for a device
    /// that does not name one (`default`, `pipewire`, `pulse`, a PCM of one's own).
    public static func card(of device: String) -> String? {
        let parts = device.split(separator: ":", maxSplits: 1).map(String.init)
        guard let plugin = parts.first, cardPlugins.contains(plugin) else { return nil }
        guard parts.count == 2 else { return "0" }
        // "0", "0,0", "CARD=Mic,DEV=0", "Mic"
        for argument in parts[1].split(separator: ",") {
            let pair = argument.split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 {
                if pair[0] == "CARD" { return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"'")) }
            } else {
                return pair[0]
            }
        }
        return "0"
    }

    /// Whether the card (its index or id) exists: `asound/cardN` or `asound/<id>`.
    func cardExists(_ card: String) -> Bool {
        let asound = (procRoot as NSString).appendingPathComponent("asound")
        let name = Int(card).map { "card\($0)" } ?? card
        return FileManager.default.fileExists(atPath: (asound as NSString).appendingPathComponent(name))
    }

    /// A sound server running on this machine, for any user (every process's `comm` can be read).
    public func runningServer() -> SoundServer? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: procRoot) else { return nil }
        for entry in entries where entry.first?.isNumber == true {
            guard let comm = try? String(contentsOfFile: "\(procRoot)/\(entry)/comm", encoding: .utf8) else { continue }
            let name = comm.trimmingCharacters(in: .whitespacesAndNewlines)
            if let server = SoundServer.allCases.first(where: { $0.processNames.contains(name) }) { return server }
        }
        return nil
    }

    /// The refusal for `device` when it opens a card that exists while a sound server
    /// runs (cards are the server's then: WirePlumber and PulseAudio take every card they
    /// find); nil when opening it takes nothing from anyone.
    public func refusal(for device: String) -> AudioCaptureError? {
        guard let card = Self.card(of: device), cardExists(card), let server = runningServer() else { return nil }
        return AudioCaptureError(kind: .managedBySoundServer, device: device,
                                 detail: "card \(card) belongs to \(server.rawValue), which runs on this machine")
    }
}
