import AgentCore
import Foundation

/// Asks the server for its stream switches: `POST {endpoint}/api/devices/verify` with the
/// device token as a Bearer token and no body, over the uploader's libcurl transport (same
/// TLS rules, same time-outs). The contract's section "Stream settings from the server".
public struct StreamSwitchClient: Sendable {
    public static let path = "/api/devices/verify"

    /// What the server said.
    public enum Outcome: Sendable, Equatable {
        /// 200 with the stream settings.
        case switches(ServerSwitches)
        /// 404/405: a server without switches (Virtues); the local config alone decides.
        case noSwitches(status: Int)
        /// 401/403: the token was refused (E002), as an upload would be.
        case unauthorized(reason: String)
        /// No usable answer (network, 5xx, another page): the last switches stay.
        case failed(reason: String, code: AgentErrorCode?)
    }

    public let server: ServerConfig
    private let makeTransport: HTTPTransportFactory

    public init(server: ServerConfig, makeTransport: @escaping HTTPTransportFactory = CurlTransport.factory) {
        self.server = server
        self.makeTransport = makeTransport
    }

    public var url: String { server.url(path: Self.path) }

    /// One request; blocks for at most the configured request time-out.
    public func fetch(now: Date, isCancelled: @escaping @Sendable () -> Bool = { false }) -> Outcome {
        let settings = ServerSettings(server)
        if let problem = settings.configurationProblem { return .failed(reason: problem, code: nil) }
        let request = HTTPRequest(url: url, headers: [("Authorization", "Bearer \(settings.token.value)")], body: Data())
        let result: Result<HTTPResponse, TransportFailure>
        do {
            result = try makeTransport(settings, isCancelled).send(request)
        } catch {
            return .failed(reason: "\(error)", code: nil)
        }
        switch result {
        case .failure(let failure):
            let code: AgentErrorCode? = [.timedOut, .cannotConnect, .nameNotResolved, .connectionLost].contains(failure.kind) ? .networkTimeout : nil
            return .failed(reason: failure.description, code: code)
        case .success(let response):
            return Self.judge(response, now: now)
        }
    }

    static func judge(_ response: HTTPResponse, now: Date) -> Outcome {
        switch response.status {
        case 200..<300:
            do {
                return .switches(try ServerSwitches.parse(response.body, at: now))
            } catch {
                return .failed(reason: "HTTP \(response.status) from \(path): \(error)", code: .notIngestEndpoint)
            }
        case 404, 405:
            return .noSwitches(status: response.status)
        case 401 where EveryDeviceRefused.matches(response):
            return .unauthorized(reason: "HTTP 401: \(EveryDeviceRefused.explanation): \(EveryDeviceRefused.hint)")
        case 401, 403:
            return .unauthorized(reason: "HTTP \(response.status): the server refused the device token: \(AgentErrorCode.invalidToken.hint)")
        case 500..<600:
            return .failed(reason: "HTTP \(response.status): \(IngestVerdict.serverMessage(response))", code: .serverError)
        default:
            return .failed(reason: "HTTP \(response.status): \(IngestVerdict.serverMessage(response))", code: nil)
        }
    }
}
