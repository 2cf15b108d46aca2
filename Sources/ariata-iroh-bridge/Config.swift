#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The one line of JSON the daemon writes on the bridge's stdin. The secret never leaves
/// this value: no message, event or description names it.
struct BridgeConfig: Sendable {
    /// The device's 32-byte Ed25519 seed.
    var secretSeed: [UInt8]
    /// The box's EndpointId, 32 bytes.
    var boxNodeId: [UInt8]
    var relayURL: String?
    var directAddrs: [String]
    var socketPath: String
    var alpn: String
    var connectTimeoutSeconds: Double

    static let defaultALPN = "virtues/http/1"
    static let defaultConnectTimeout = 10.0

    /// What a config line may hold; anything else in it is ignored.
    private struct Wire: Decodable {
        var secret_key: String?
        var box_node_id: String?
        var relay_url: String?
        var direct_addrs: [String]?
        var socket: String?
        var alpn: String?
        var connect_timeout_seconds: Double?
    }

    /// Parses and checks the line; a failure's text is for people and never quotes the line.
    static func parse(_ line: [UInt8]) throws(ConfigError) -> BridgeConfig {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(line))
        } catch {
            throw ConfigError("the config line is not a JSON object with the documented fields (see --help)")
        }
        guard let secretHex = wire.secret_key, let seed = hexBytes(secretHex), seed.count == 32 else {
            throw ConfigError("secret_key must be 64 hex characters (the device's 32-byte Ed25519 seed)")
        }
        guard let boxHex = wire.box_node_id, let boxId = hexBytes(boxHex), boxId.count == 32 else {
            throw ConfigError("box_node_id must be 64 hex characters (the box's EndpointId)")
        }
        var relay: String?
        if let url = wire.relay_url, !url.isEmpty {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw ConfigError("relay_url must be an http(s) URL or null")
            }
            relay = url
        }
        let addrs = wire.direct_addrs ?? []
        for addr in addrs where !isSocketAddress(addr) {
            throw ConfigError("direct_addrs holds \"\(String(addr.prefix(60)))\", which is not an IP address with a port (192.0.2.1:51820, [2001:db8::1]:51820)")
        }
        if relay == nil && addrs.isEmpty {
            throw ConfigError("no way to the box: relay_url is null and direct_addrs is empty")
        }
        guard let socket = wire.socket, !socket.isEmpty else {
            throw ConfigError("socket (the Unix socket path to listen on) is missing")
        }
        // sun_path holds 108 bytes with the terminating NUL.
        guard socket.utf8.count < 108, !socket.utf8.contains(0) else {
            throw ConfigError("socket path is longer than a Unix socket address allows (107 bytes)")
        }
        let alpn = wire.alpn ?? defaultALPN
        guard !alpn.isEmpty, alpn.utf8.count <= 255 else {
            throw ConfigError("alpn must be 1 to 255 bytes")
        }
        let timeout = wire.connect_timeout_seconds ?? defaultConnectTimeout
        guard timeout > 0, timeout <= 600 else {
            throw ConfigError("connect_timeout_seconds must be more than 0 and at most 600")
        }
        return BridgeConfig(secretSeed: seed, boxNodeId: boxId, relayURL: relay, directAddrs: addrs,
                            socketPath: socket, alpn: alpn, connectTimeoutSeconds: timeout)
    }
}

struct ConfigError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Bytes of an even-length hex string (either case), or nil.
func hexBytes(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
    var out: [UInt8] = []
    out.reserveCapacity(digits.count / 2)
    var i = 0
    while i < digits.count {
        guard let hi = value(digits[i]), let lo = value(digits[i + 1]) else { return nil }
        out.append(hi << 4 | lo)
        i += 2
    }
    return out
}

func lowercaseHex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// "192.0.2.1:51820" or "[2001:db8::1]:51820": what iroh takes as a direct address.
func isSocketAddress(_ text: String) -> Bool {
    guard let colon = text.lastIndex(of: ":") else { return false }
    let host = text[..<colon]
    let port = text[text.index(after: colon)...]
    guard let p = UInt16(port), p > 0 else { return false }
    var buffer = in6_addr()
    if host.hasPrefix("[") && host.hasSuffix("]") {
        return inet_pton(AF_INET6, String(host.dropFirst().dropLast()), &buffer) == 1
    }
    return inet_pton(AF_INET, String(host), &buffer) == 1
}
