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
    public var ingestURL: String {
        var base = endpoint
        while base.hasSuffix("/") { base.removeLast() }
        let path = ingestPath.hasPrefix("/") ? ingestPath : "/" + ingestPath
        return base + path
    }

    init(_ s: ConfigSection) throws {
        endpoint = try s.string("endpoint", default: endpoint)
        if !endpoint.isEmpty {
            guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(),
                  ["http", "https"].contains(scheme), url.host != nil else {
                throw s.error("endpoint", "\"\(endpoint)\" is not an http:// or https:// URL")
            }
        }
        ingestPath = try s.string("ingest_path", default: ingestPath)
        tokenFile = try s.optionalString("token_file")
        token = Secret(try s.string("token", default: ""))
        if token.isEmpty, let tokenFile {
            guard let text = try? String(contentsOfFile: tokenFile, encoding: .utf8) else {
                throw s.error("token_file", "cannot read \(tokenFile): check that it exists and the service user may read it")
            }
            token = Secret(text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        deviceID = try s.string("device_id", default: deviceID)
        deviceName = try s.string("device_name", default: deviceName)
        caFile = try s.optionalString("ca_file")
        gzip = try s.bool("gzip", default: gzip)
        connectTimeout = try s.int("connect_timeout", default: connectTimeout, range: 1...120, unit: "seconds")
        requestTimeout = try s.int("request_timeout", default: requestTimeout, range: 1...600, unit: "seconds")
        try s.finish()
    }
}
