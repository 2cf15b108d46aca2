import Foundation

/// `[box]`: how this device reaches a Virtues box, the server generation that pairs with
/// a 6-digit code and then speaks HTTP over iroh (docs/install.md, "Pairing with a
/// Virtues box"; docs/upload.md, "The Virtues box"). Written by `onboard --code` from the
/// box's pairing answer; empty for the older servers.
public struct BoxConfig: Sendable, Equatable {
    /// The box's iroh EndpointId (its Ed25519 public key, 64 lower-case hex).
    public var nodeID: String = ""
    /// The box's relay (`https://…`); unset for a box whose relay is off ("LAN-only").
    public var relayURL: String?
    /// The box's direct addresses on its network (`192.168.1.20:51820`).
    public var directAddresses: [String] = []
    /// The ingest applet the box gave this device (`applet_ids.ios_ingest`).
    public var appletID: String = ""
    /// The box's id for this device (its device list names it so).
    public var deviceID: String = ""
    /// This device's iroh identity: its 32-byte Ed25519 seed as 64 hex characters. A
    /// secret like the device token (the file is 0600); `key_file` is read when unset.
    public var key: Secret = Secret("")
    public var keyFile: String?
    /// When this device last paired (RFC 3339): a new pairing ends the waits that the
    /// box's refusal of the old one caused (`onboard` writes it).
    public var pairedAt: String = ""
    /// What is sent of a chunk the box's own app would call silent.
    public var silentAudio: SilentAudio = .omit
    /// The bridge program that carries the requests over iroh; unset: beside the agent's
    /// program, else /usr/lib/ariata-agent/ariata-iroh-bridge.
    public var bridge: String?

    public init() {}

    /// True when the pairing answer was kept: there is a box to upload to.
    public var isPaired: Bool { !nodeID.isEmpty && !appletID.isEmpty && !key.isEmpty }

    /// An EndpointId or a seed as the box and the library write them: 64 lower-case hex.
    public static func isKeyHex(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

/// What the agent sends of a chunk whose mean is below -60 dBFS and whose peak is below
/// -50 dBFS, the box's own app's rule for a silent chunk (docs/streams/microphone.md,
/// "On a Virtues box").
public enum SilentAudio: String, Sendable, Equatable, CaseIterable {
    /// The record without `audio_data`, `is_silent: true`, as the box's app sends it: the
    /// box keeps no audio and pays for no transcription.
    case omit
    /// The record with its audio, like every other chunk.
    case send
}

extension BoxConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.string("node_id", \.nodeID) { id in
            id.isEmpty || BoxConfig.isKeyHex(id) ? nil : "\"\(id)\" is not an iroh EndpointId (64 lower-case hex characters): pair again with 'ariata-agent onboard --code'"
        },
         .optionalString("relay_url", \.relayURL) { url in
            url.hasPrefix("https://") || url.hasPrefix("http://") ? nil : "\"\(url)\" is not an http:// or https:// URL"
        },
         .strings("direct_addresses", \.directAddresses) { address in
            address.contains(":") ? nil : "\"\(address)\" is not an address with a port (192.168.1.20:51820)"
        },
         .string("applet_id", \.appletID),
         .string("device_id", \.deviceID),
         .string("paired_at", \.pairedAt),
         .optionalString("key_file", \.keyFile),
         // With a key_file the key stays in that file, out of this one.
         ConfigKey("key", read: { s, t in t.key = Secret(try s.string("key", default: t.key.value)) },
                   write: { $0.keyFile == nil && !$0.key.isEmpty ? $0.key.value : nil }),
         .choice("silent_audio", \.silentAudio, allowed: SilentAudio.allCases),
         .optionalString("bridge", \.bridge)]
    }

    mutating func validate(_ s: ConfigSection) throws {
        if key.isEmpty, let keyFile {
            guard let text = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
                throw s.error("key_file", "cannot read \(keyFile): check that it exists and the service user may read it")
            }
            key = Secret(text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        if !key.isEmpty && !BoxConfig.isKeyHex(key.value) {
            throw s.error(keyFile == nil ? "key" : "key_file", "not a device key (64 lower-case hex characters): pair again with 'ariata-agent onboard --code'")
        }
    }
}
