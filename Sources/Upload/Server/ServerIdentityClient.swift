import AgentCore
import Foundation

/// Asks the server which generation and build it is: `GET {endpoint}/health`, public on
/// both generations (no token is sent), over the uploader's libcurl transport (same TLS
/// rules). The contract's section "Server identity".
public struct ServerIdentityClient: Sendable {
    public static let path = "/health"

    public enum Outcome: Sendable, Equatable {
        case identified(ServerIdentity)
        /// No usable answer: the reason, for a log line or onboarding's output.
        case failed(reason: String)
    }

    public let server: ServerConfig
    /// Seconds for the whole request (and at most that for the connect).
    public let timeout: Int

    public init(server: ServerConfig, timeout: Int? = nil) {
        self.server = server
        self.timeout = max(1, timeout ?? server.requestTimeout)
    }

    public var url: String { server.url(path: Self.path) }

    /// One request; blocks for at most `timeout` seconds.
    public func fetch(now: Date, isCancelled: @escaping @Sendable () -> Bool = { false }) -> Outcome {
        guard !server.endpoint.isEmpty else { return .failed(reason: "no server endpoint configured") }
        let url = url
        let result = ServerRequest.send(server: server, timeout: timeout, isCancelled: isCancelled) { _ in .get(url: url, headers: []) }
        switch result {
        case .failure(let failure):
            return .failed(reason: failure.description)
        case .success(let response):
            return Self.judge(response, now: now)
        }
    }

    public static func judge(_ response: HTTPResponse, now: Date) -> Outcome {
        // Every answer of a box names its build, whatever the route says.
        if let build = response.headers[ServerIdentity.boxBuildHeader], let box = ServerIdentity.box(buildHeader: build, at: now) {
            return .identified(box)
        }
        // Virtues answers 503 with the same report while its database is down: still itself.
        guard (200..<300).contains(response.status) || response.status == 503 else {
            return .failed(reason: "HTTP \(response.status) from \(path): not either server's health route")
        }
        do {
            return .identified(try ServerIdentity.parse(response.body, at: now))
        } catch {
            return .failed(reason: "HTTP \(response.status) from \(path): \(error)")
        }
    }
}
