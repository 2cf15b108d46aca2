import AgentCore
import Foundation

/// What a Virtues box's answers to a batch mean (the contract's section "The Virtues
/// box", Ingest; docs/upload.md, "The Virtues box"). The box checks nothing and proves
/// nothing but `200 {"status": "success"}`, so only that marks records delivered.
public enum BoxAnswer {
    /// What a person does when the box no longer knows this device.
    public static let pairAgain = "the box no longer knows this device: pair again (run 'virtues pair' on the box, then 'ariata-agent onboard --code CODE'); nothing is dropped meanwhile"

    /// The fields of the box's answers that decide: `status` and `error`. Read with
    /// JSONDecoder, not JSONSerialization, whose corelibs code the daemon otherwise never
    /// runs (docs/decisions/0005-start-up-page-drop.md).
    private struct Said: Decodable {
        var status: String?
        var error: String?
    }

    public static func verdict(_ result: Result<HTTPResponse, TransportFailure>, sent: Int, now: Date) -> IngestVerdict {
        guard case .success(let response) = result else { return IngestVerdict.of(result, sent: sent, now: now) }
        let object = try? JSONDecoder().decode(Said.self, from: response.body)
        let said = object.flatMap { $0.error ?? $0.status }
        switch response.status {
        case 200..<300:
            guard object?.status == "success" else {
                return .retryLater(reason: "the box answered \(response.status) without \"status\": \"success\" (\(IngestVerdict.serverMessage(response))): not proven stored",
                                   code: .notIngestEndpoint, retryAfter: nil)
            }
            return .accepted
        case 409 where said == "skipped":
            return .retryLater(reason: "HTTP 409 skipped: the box is still storing an earlier batch of this device's applet",
                               code: nil, retryAfter: nil)
        case 409:
            return .retryLater(reason: "HTTP 409: the box could not read the batch (\(IngestVerdict.serverMessage(response)))",
                               code: nil, retryAfter: nil)
        case 401, 403:
            return .unauthorized(reason: "HTTP \(response.status) from the box: \(pairAgain)")
        case 404:
            return .appletUnknown(reason: "HTTP 404: the box has no applet at this address (\(IngestVerdict.serverMessage(response)))")
        case 500..<600:
            // The applet failed on this batch: a bounded number of tries (each record's
            // attempts), then the records are set apart as failed, never deleted.
            return .blamed(reason: "HTTP \(response.status): the box's ingest applet failed on the batch (\(IngestVerdict.serverMessage(response)))")
        default:
            return IngestVerdict.of(response, sent: sent, now: now)
        }
    }

    /// The ids `GET /api/devices/applet-ids` gives: `{"ios_ingest": "<id>", …}` at the top
    /// or under `applet_ids` (older boxes: `action_ids`).
    public static func ingestApplet(in body: Data) -> String? {
        struct Ids: Decodable {
            var ios_ingest: String?
        }
        struct Answer: Decodable {
            var ios_ingest: String?
            var applet_ids: Ids?
            var action_ids: Ids?
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: body) else { return nil }
        return [answer.ios_ingest, answer.applet_ids?.ios_ingest, answer.action_ids?.ios_ingest]
            .compactMap { $0 }.first { !$0.isEmpty }
    }

    public static let appletIDsPath = "/api/devices/applet-ids"
}
