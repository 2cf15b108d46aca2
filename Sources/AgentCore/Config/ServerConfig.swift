import Foundation

/// `[server]`: where and how to upload.
public struct ServerConfig: Sendable, Equatable {
    /// Base URL of the Ariata server, e.g. `https://ariata.example.org`. Empty until onboarding.
    public var endpoint: String = ""
    /// Path of the ingest endpoint below `endpoint`.
    public var ingestPath: String = "/ingest"
    /// The device token; `token_file` is read when `token` is not set.
    public var token: Secret = Secret("")
    public var tokenFile: String?
    /// A stable id for this device (written by onboarding).
    public var deviceID: String = ""
    public var deviceName: String = ""
    /// CA bundle for a self-signed server. TLS verification is never turned off.
    public var caFile: String?
    public var gzip: Bool = false
    public var connectTimeout: Int = 10
    public var requestTimeout: Int = 30

    public init() {}

    /// True when there is something to upload to.
    public var isOnboarded: Bool { !endpoint.isEmpty && !token.isEmpty }

    /// The full URL of the ingest endpoint.
    public var ingestURL: String { url(path: ingestPath) }

    /// The full URL of `path` below the endpoint (`/api/devices/verify`).
    public func url(path: String) -> String {
        var base = endpoint
        while base.hasSuffix("/") { base.removeLast() }
        return base + (path.hasPrefix("/") ? path : "/" + path)
    }

}

extension ServerConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.string("endpoint", \.endpoint) { endpoint in
            guard !endpoint.isEmpty else { return nil }
            guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(),
                  ["http", "https"].contains(scheme), url.host != nil else {
                return "\"\(endpoint)\" is not an http:// or https:// URL"
            }
            return nil
        },
         .string("ingest_path", \.ingestPath),
         .optionalString("token_file", \.tokenFile),
         // With a token_file the token stays in that file, out of this one.
         ConfigKey("token", read: { s, t in t.token = Secret(try s.string("token", default: t.token.value)) },
                   write: { $0.tokenFile == nil ? $0.token.value : nil }),
         .string("device_id", \.deviceID),
         .string("device_name", \.deviceName),
         .optionalString("ca_file", \.caFile),
         .bool("gzip", \.gzip),
         .int("connect_timeout", \.connectTimeout, range: 1...120, unit: "seconds"),
         .int("request_timeout", \.requestTimeout, range: 1...600, unit: "seconds")]
    }

    mutating func validate(_ s: ConfigSection) throws {
        if token.isEmpty, let tokenFile {
            guard let text = try? String(contentsOfFile: tokenFile, encoding: .utf8) else {
                throw s.error("token_file", "cannot read \(tokenFile): check that it exists and the service user may read it")
            }
            token = Secret(text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}
