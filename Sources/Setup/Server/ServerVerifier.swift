import AgentCore
import Foundation
import Upload

/// Verifies an endpoint and a device token before anything is saved: it sends one
/// request exactly as the uploader would (same body builder, same headers, same libcurl
/// transport, same TLS rules) but with an empty `records` array, so nothing is stored on
/// the server, and turns the outcome into a message that says what to do.
///
/// Why an empty batch: it is a request the contract allows (`records` is an array), the
/// reference receiver and the contract's server answer it with 200 and `accepted: 0`,
/// and it exercises the whole path (DNS, TCP, TLS, the ingest path, the token) without
/// inventing a record.
///
/// Answers and what they mean:
/// - 2xx with a JSON body: verified. 2xx with anything else (an HTML page) is not the
///   ingest endpoint: a catch-all web page would otherwise pass without checking the token.
/// - 400/422 with a JSON body: counted as verified, with a warning that quotes the server.
///   Servers check the token before the body (the reference receiver answers 401 before
///   any 400, as the contract orders them), so the token got through; the server only
///   refuses an empty batch, which the agent never sends otherwise. A 400 whose body is
///   not JSON is a proxy's page (nginx's "plain HTTP request was sent to HTTPS port"),
///   so it is a failure with a hint about the scheme.
/// - 401/403: E002, the token. 404/405: the path. 3xx: the Location to use instead
///   (redirects are not followed: a POST must reach the endpoint itself). 408/429: busy.
///   5xx: E003.
public struct ServerVerifier: Sendable {
    public var server: ServerConfig
    /// Seconds to wait for the answer (and at most that for the connection).
    public var timeout: Int

    public init(server: ServerConfig, timeout: Int? = nil) {
        self.server = server
        self.timeout = max(1, timeout ?? server.requestTimeout)
    }

    public func verify(now: Date = Date()) -> ServerVerification {
        let url = server.ingestURL
        if let problem = Self.urlProblem(server.endpoint) {
            return ServerVerification(outcome: .badURL, url: url, elapsed: 0, message: problem,
                                      hint: "give the server's base URL, e.g. https://ariata.example.org")
        }
        // The device id is required by the envelope; before onboarding has one, any
        // non-empty id does (nothing is stored for an empty batch).
        let deviceID = server.deviceID.isEmpty ? "onboarding" : server.deviceID
        let batchID = UUID()
        let body = IngestBody.build(stream: .location, deviceID: deviceID, records: [], batchID: batchID, timestamp: now)
        let started = ContinuousClock.now
        func seconds() -> TimeInterval {
            let d = ContinuousClock.now - started
            return TimeInterval(d.components.seconds) + TimeInterval(d.components.attoseconds) / 1e18
        }
        let result = ServerRequest.send(server: server, timeout: timeout) { settings in
            try IngestBody.request(settings: settings, body: body, batchID: batchID)
        }
        switch result {
        case .success(let response):
            return Self.judge(response, url: url, endpoint: server.endpoint, ingestPath: server.ingestPath, elapsed: seconds())
        case .failure(let failure):
            return Self.judge(failure, url: url, timeout: timeout, elapsed: seconds())
        }
    }

    /// Why `endpoint` cannot be posted to, nil when it can.
    public static func urlProblem(_ endpoint: String) -> String? {
        if endpoint.isEmpty { return "no endpoint given" }
        guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme) else {
            return "\"\(endpoint)\" is not an http:// or https:// URL"
        }
        guard let host = url.host, !host.isEmpty else { return "\"\(endpoint)\" has no host name" }
        return nil
    }

    static func judge(_ failure: TransportFailure, url: String, timeout: Int, elapsed: TimeInterval) -> ServerVerification {
        let host = URL(string: url).flatMap { u in u.host.map { h in u.port.map { "\(h):\($0)" } ?? h } } ?? url
        func make(_ outcome: ServerVerification.Outcome, _ message: String, _ hint: String) -> ServerVerification {
            ServerVerification(outcome: outcome, url: url, elapsed: elapsed, message: message, hint: hint)
        }
        switch failure.kind {
        case .nameNotResolved:
            return make(.nameNotResolved, "cannot resolve the host name \(URL(string: url)?.host ?? url) (DNS)",
                        "check the spelling of the endpoint, and this machine's DNS (resolvectl status, /etc/resolv.conf)")
        case .cannotConnect:
            return make(.cannotConnect, "nothing accepts connections at \(host): refused or unreachable (\(failure.detail))",
                        "check the host and port of the endpoint and that the server runs; a firewall may be in the way")
        case .tls:
            let detail = failure.detail
            if detail.contains("wrong version number") || detail.contains("packet length too long") {
                // OpenSSL's words when the other end answers TLS with plain HTTP.
                return make(.tls, "TLS failed: the server speaks plain HTTP on that port (\(detail))",
                            "use http:// for this port, or the server's https port")
            }
            return make(.tls, "the server's TLS certificate is not trusted (\(detail))",
                        "for a self-signed server pass its CA certificate with --ca-file /path/to/ca.pem; check the clock too (date), a wrong date fails every certificate")
        case .connectionLost:
            return make(.connectionLost, "the connection was closed without an answer (\(failure.detail))",
                        "wrong scheme (http:// to an https:// port, or the reverse) or not an HTTP server at that port? check the endpoint")
        case .timedOut:
            return make(.timedOut, "\(AgentErrorCode.networkTimeout.rawValue) no answer within \(timeout) s (\(AgentErrorCode.networkTimeout.meaning))",
                        "check the network and that the endpoint answers (curl -v \(url)); for a slow server pass --timeout")
        case .notAllowlisted:
            return make(.tokenRefused, failure.description, BoxAnswer.pairAgain)
        case .cancelled, .other:
            return make(.localProblem, "the request could not be sent: \(failure.detail)", "check the endpoint URL")
        }
    }

    static func judge(_ response: HTTPResponse, url: String, endpoint: String, ingestPath: String,
                      elapsed: TimeInterval) -> ServerVerification {
        let status = response.status
        let json = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        let said = Self.serverWords(response.body, json: json)
        func make(_ outcome: ServerVerification.Outcome, _ message: String, _ hint: String?) -> ServerVerification {
            ServerVerification(outcome: outcome, url: url, status: status, elapsed: elapsed, message: message, hint: hint)
        }
        let ms = Int((elapsed * 1000).rounded())
        switch status {
        case 200..<300 where IngestAnswer(response.body) != nil:
            return make(.verified, "verified: the server took the device token (HTTP \(status) in \(ms) ms)", nil)
        case 200..<300:
            return make(.unexpectedAnswer, "\(AgentErrorCode.notIngestEndpoint.rawValue) \(IngestAnswer.describeNonAnswer(response))\(said)",
                        "check the endpoint and the ingest path (--ingest-path, default /ingest): this looks like a web page")
        case 300..<400:
            let location = response.headers["location"]
            var hint = "use the address it redirects to as the endpoint"
            if let location {
                var base = location
                if base.hasSuffix(ingestPath) { base.removeLast(ingestPath.count) }
                hint = "use \(base) as the endpoint (the agent does not follow redirects: a POST must reach the server itself)"
            }
            return make(.redirected, "the server redirects (HTTP \(status)) to \(location ?? "an address it does not give")", hint)
        case 401 where EveryDeviceRefused.matches(response):
            return make(.everyDeviceRefused, "\(AgentErrorCode.invalidToken.rawValue) HTTP 401: \(EveryDeviceRefused.explanation)",
                        "no token passes this check: update the server (or ask its administrator), then run onboard again")
        case 401, 403:
            return make(.tokenRefused, "\(AgentErrorCode.invalidToken.rawValue) the server refused the device token (HTTP \(status))\(said)",
                        "copy the device token again from the server (a new one if it was revoked)")
        case 404, 405:
            var hint = "check the endpoint (the server's base URL) and the ingest path (--ingest-path, default /ingest)"
            var trimmed = endpoint
            while trimmed.hasSuffix("/") { trimmed.removeLast() }
            let path = ingestPath.hasPrefix("/") ? ingestPath : "/" + ingestPath
            if trimmed.hasSuffix(path) {
                hint = "the endpoint already ends in \(path): give the base URL, \(trimmed.dropLast(path.count))"
            }
            return make(.wrongPath, "no ingest endpoint at \(url) (HTTP \(status))\(said)", hint)
        case 400 where json != nil, 422 where json != nil:
            return make(.verifiedRefusingEmptyBatch,
                        "reached, and the token passed, but the server refuses an empty batch (HTTP \(status))\(said)",
                        "nothing to do unless uploads fail later: the agent never sends empty batches; if they do, the server may not speak this agent's contract")
        case 400, 422:
            return make(.unexpectedAnswer, "HTTP \(status) from something that is not the ingest endpoint\(said)",
                        "wrong scheme? (http:// to an https:// port answers like this) check the endpoint")
        case 408, 429:
            return make(.busy, "the server is busy (HTTP \(status))\(said)", "try again in a minute")
        case 500..<600:
            return make(.serverError, "\(AgentErrorCode.serverError.rawValue) the server failed (HTTP \(status))\(said)",
                        "try again later; if it persists, look at the server's logs")
        default:
            return make(.unexpectedAnswer, "unexpected answer HTTP \(status)\(said)",
                        "check the endpoint and the ingest path; is this an Ariata server?")
        }
    }

    /// The server's own explanation, short: `: "…"` from a JSON `error`/`detail`/`message`,
    /// or the first line of a text answer; empty when there is none.
    static func serverWords(_ body: Data, json: [String: Any]?) -> String {
        var text: String?
        if let json {
            text = ["error", "detail", "message"].lazy.compactMap { json[$0] as? String }.first
        } else if !body.isEmpty {
            let plain = String(decoding: body.prefix(2_000), as: UTF8.self)
            // An HTML page: its title says most; otherwise the first non-empty line.
            if let open = plain.range(of: "<title>", options: .caseInsensitive),
               let close = plain.range(of: "</title>", options: .caseInsensitive, range: open.upperBound..<plain.endIndex) {
                text = String(plain[open.upperBound..<close.lowerBound])
            } else {
                text = plain.split(whereSeparator: \.isNewline).first.map(String.init)
            }
        }
        guard var words = text?.trimmingCharacters(in: .whitespacesAndNewlines), !words.isEmpty else { return "" }
        if words.count > 160 { words = String(words.prefix(157)) + "..." }
        return ": \"\(words)\""
    }

}
