import AgentCore
import Foundation

/// What the transport and the request builder need of `[server]`, resolved once.
public struct ServerSettings: Sendable, Equatable {
    public var ingestURL: String
    public var token: Secret
    public var deviceID: String
    public var caFile: String?
    public var gzip: Bool
    public var connectTimeout: Int
    public var requestTimeout: Int
    /// Why nothing can be uploaded with these settings, nil when something can.
    public var configurationProblem: String?
    /// A Virtues box's reach ticket and applet: uploads go over iroh through the bridge
    /// (`BoxTransport`), as the box's webhook wants them. Nil for the older servers.
    public var box: BoxConfig?
    /// The bridge's Unix socket that libcurl sends each request to (set by `BoxTransport`).
    public var unixSocket: String?

    public init(_ server: ServerConfig, box boxConfig: BoxConfig = BoxConfig()) {
        ingestURL = server.ingestURL
        token = server.token
        deviceID = server.deviceID
        caFile = server.caFile
        gzip = server.gzip
        connectTimeout = server.connectTimeout
        requestTimeout = server.requestTimeout
        if boxConfig.isPaired {
            box = boxConfig
            ingestURL = BoxConfig.url(path: "/webhook/\(boxConfig.appletID)")
            token = Secret("")
            gzip = false
        }
        if server.endpoint.isEmpty {
            configurationProblem = "no server endpoint configured: run 'ariata-agent onboard'"
        } else if box == nil && server.token.isEmpty {
            configurationProblem = "no device token configured: run 'ariata-agent onboard' or set [server] token or token_file"
        } else if server.deviceID.isEmpty {
            // Every batch would be refused for its envelope, and splitting would then
            // fail each record in turn: better to send nothing.
            configurationProblem = "no device id configured: run 'ariata-agent onboard' or set [server] device_id"
        }
    }
}

extension BoxConfig {
    /// Which pairing this is (when it was made), as one word.
    public var pairing: String { pairedAt.isEmpty ? "-" : pairedAt }

    /// The URL of `path` on the box, as libcurl sends it through the bridge: the host is
    /// never resolved (the bridge's socket is the connection), only named in the request.
    public static func url(path: String) -> String { "http://virtues-box" + (path.hasPrefix("/") ? path : "/" + path) }
}
