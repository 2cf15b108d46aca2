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

    public init(_ server: ServerConfig) {
        ingestURL = server.ingestURL
        token = server.token
        deviceID = server.deviceID
        caFile = server.caFile
        gzip = server.gzip
        connectTimeout = server.connectTimeout
        requestTimeout = server.requestTimeout
        if server.endpoint.isEmpty {
            configurationProblem = "no server endpoint configured: run 'ariata-agent onboard'"
        } else if server.token.isEmpty {
            configurationProblem = "no device token configured: run 'ariata-agent onboard' or set [server] token or token_file"
        } else if server.deviceID.isEmpty {
            // Every batch would be refused for its envelope, and splitting would then
            // fail each record in turn: better to send nothing.
            configurationProblem = "no device id configured: run 'ariata-agent onboard' or set [server] device_id"
        }
    }
}
