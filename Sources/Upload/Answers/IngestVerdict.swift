import AgentCore
import Foundation

/// What the contract says to do with a batch after one attempt to send it.
public enum IngestVerdict: Sendable, Equatable {
    /// 2xx with the ingest answer, nothing rejected and every record sent accepted: the
    /// only verdict that marks records uploaded.
    case accepted
    /// 400, 413, 422, or a 200 that accepted none and rejected records: this batch as
    /// sent will never be accepted, and the answer proves none of it stored. `named`: the
    /// records the answer names as refused (often none).
    case rejected(reason: String, named: Set<UUID>)
    /// A 200 that accepted some records and rejected others: `accepted` of them are stored,
    /// which ones only `named` (the refused ones) can tell.
    case partlyAccepted(accepted: Int, rejected: Int, reason: String, named: Set<UUID>)
    /// 408, 429, 5xx, no answer, or an endpoint that is not an ingest endpoint (3xx,
    /// 404, 405, a 2xx without the ingest answer or with fewer accepted than sent):
    /// nothing is wrong with the records; try later. Costs no attempt.
    case retryLater(reason: String, code: AgentErrorCode?, retryAfter: TimeInterval?)
    /// 401/403: the token was refused (E002). Pause; costs no attempt.
    case unauthorized(reason: String)
    /// Any other answer: it blames the batch without saying which record. Costs one of
    /// each record's attempts, so such a batch is not retried forever.
    case blamed(reason: String)
    /// A Virtues box's 404: no applet at the address the batch went to. The cycle asks the
    /// box for this device's current applet once, then stops.
    case appletUnknown(reason: String)
    /// The uploader is stopping.
    case cancelled

    /// - Parameter sent: how many records the request carried; a success must account for all.
    public static func of(_ result: Result<HTTPResponse, TransportFailure>, sent: Int, now: Date) -> IngestVerdict {
        switch result {
        case .failure(let failure):
            switch failure.kind {
            case .cancelled:
                return .cancelled
            case .timedOut, .cannotConnect, .nameNotResolved, .connectionLost:
                return .retryLater(reason: failure.description, code: .networkTimeout, retryAfter: nil)
            case .tls, .other:
                return .retryLater(reason: failure.description, code: nil, retryAfter: nil)
            case .notAllowlisted:
                return .unauthorized(reason: "\(failure.description): \(BoxAnswer.pairAgain)")
            }
        case .success(let response):
            return of(response, sent: sent, now: now)
        }
    }

    static func of(_ response: HTTPResponse, sent: Int, now: Date) -> IngestVerdict {
        let status = response.status
        let retryAfter = response.headers["retry-after"].flatMap { RetryAfter.seconds(from: $0, now: now) }
        switch status {
        case 200..<300:
            // A success is a success only when the server proves it: its answer counts
            // every record sent as accepted. Anything else leaves the records pending.
            guard let answer = IngestAnswer(response.body) else {
                return .retryLater(reason: IngestAnswer.describeNonAnswer(response), code: .notIngestEndpoint, retryAfter: retryAfter)
            }
            if answer.rejected > 0 {
                let named = RefusedRecordIDs.named(in: response.body)
                guard answer.accepted > 0 else {
                    return .rejected(reason: "HTTP \(status) with \(answer.rejected) rejected: \(serverMessage(response))", named: named)
                }
                return .partlyAccepted(accepted: answer.accepted, rejected: answer.rejected,
                                       reason: "HTTP \(status) with \(answer.accepted) accepted and \(answer.rejected) rejected: \(serverMessage(response))",
                                       named: named)
            }
            guard answer.accepted == sent else {
                return .retryLater(reason: "the server answered \(status) with accepted \(answer.accepted) and rejected 0 for \(sent) records sent: not proven stored",
                                   code: .notIngestEndpoint, retryAfter: retryAfter)
            }
            return .accepted
        case 400, 413, 422:
            return .rejected(reason: "HTTP \(status): \(serverMessage(response))", named: RefusedRecordIDs.named(in: response.body))
        case 401 where EveryDeviceRefused.matches(response):
            return .unauthorized(reason: "HTTP 401: \(EveryDeviceRefused.explanation): \(EveryDeviceRefused.hint)")
        case 401, 403:
            return .unauthorized(reason: "HTTP \(status): the server refused the device token: \(AgentErrorCode.invalidToken.hint)")
        case 408:
            return .retryLater(reason: "HTTP 408: the server timed out reading the request", code: .networkTimeout, retryAfter: retryAfter)
        case 429:
            return .retryLater(reason: "HTTP 429: the server asks to slow down", code: .rateLimited, retryAfter: retryAfter)
        case 500..<600:
            return .retryLater(reason: "HTTP \(status): \(serverMessage(response))", code: .serverError, retryAfter: retryAfter)
        case 300..<400, 404, 405:
            return .retryLater(reason: "HTTP \(status): this is not the ingest endpoint: check [server] endpoint and ingest_path",
                               code: .notIngestEndpoint, retryAfter: retryAfter)
        default:
            return .blamed(reason: "HTTP \(status): \(serverMessage(response))")
        }
    }

    /// The server's explanation: the `error`/`message`/`detail` of a JSON answer (with the
    /// ids it names under `errors`), else the start of the body as text.
    static func serverMessage(_ response: HTTPResponse) -> String {
        if let object = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any] {
            var parts: [String] = []
            for key in ["error", "message", "detail"] {
                if let text = object[key] as? String { parts.append(text) }
            }
            if let errors = object["errors"] as? [Any], !errors.isEmpty {
                let described = errors.prefix(5).map { error -> String in
                    guard let entry = error as? [String: Any] else { return "\(error)" }
                    let id = (entry["id"] as? String).map { "\($0): " } ?? ""
                    return id + ((entry["error"] as? String) ?? (entry["message"] as? String) ?? "\(entry)")
                }
                parts.append(described.joined(separator: "; "))
            }
            if !parts.isEmpty { return parts.joined(separator: " - ") }
        }
        let text = String(decoding: response.body.prefix(300), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "no explanation in the answer" : text
    }
}
