import AgentCore
import Foundation
import Upload

/// One request to the server as onboarding sends it (the verification, the pairing): the
/// server's settings with `timeout` seconds for the request and at most that for the
/// connect, and every failure, building the request included, as a `TransportFailure`.
enum ServerRequest {
    static func send(server: ServerConfig, timeout: Int, isCancelled: @escaping @Sendable () -> Bool = { false },
                     _ request: (ServerSettings) throws -> HTTPRequest) -> Result<HTTPResponse, TransportFailure> {
        var settings = ServerSettings(server)
        settings.requestTimeout = timeout
        settings.connectTimeout = min(settings.connectTimeout, timeout)
        do {
            let transport = try CurlTransport(settings: settings, isCancelled: isCancelled)
            return transport.send(try request(settings))
        } catch let failure as TransportFailure {
            return .failure(failure)
        } catch {
            return .failure(TransportFailure(kind: .other, detail: "\(error)"))
        }
    }
}
