import AgentCore
import Foundation

/// One request to the server outside the upload cycle (onboarding's verification and
/// pairing, the link check, the `/health` ask): the
/// server's settings with `timeout` seconds for the request and at most that for the
/// connect, and every failure, building the request included, as a `TransportFailure`.
public enum ServerRequest {
    public static func send(server: ServerConfig, timeout: Int, isCancelled: @escaping @Sendable () -> Bool = { false },
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
