import Foundation

/// The body of the ingest endpoint's 2xx answer: `{"accepted": N, "rejected": M, …}`.
///
/// Only this body proves the records were stored: a captive portal, a login proxy in
/// front of a self-hosted server or a web app behind a wrong path answer 200 too, with a
/// page or some other JSON. Uploads and onboarding both read answers through this type,
/// so they can never disagree about what the ingest endpoint sounds like.
public struct IngestAnswer: Sendable, Equatable {
    public var accepted: Int
    public var rejected: Int

    private struct Wire: Decodable {
        var accepted: Int
        var rejected: Int
    }

    /// Nil unless `body` is a JSON object whose `accepted` and `rejected` are whole,
    /// non-negative numbers (JSONDecoder refuses `true`, `1.5` and `"3"` for an Int).
    public init?(_ body: Data) {
        guard let wire = try? JSONDecoder().decode(Wire.self, from: body), wire.accepted >= 0, wire.rejected >= 0 else {
            return nil
        }
        accepted = wire.accepted
        rejected = wire.rejected
    }

    /// What a 2xx answer that is not the ingest endpoint's looks like, for the log and `status`.
    public static func describeNonAnswer(_ response: HTTPResponse) -> String {
        let type = (response.headers["content-type"] ?? "").lowercased()
        let start = response.body.prefix(512).drop { [0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        let what: String
        if type.contains("html") || start.first == UInt8(ascii: "<") {
            what = "a web page"
        } else if response.body.isEmpty {
            what = "an empty body"
        } else if (try? JSONSerialization.jsonObject(with: response.body)) != nil {
            what = "JSON without the ingest answer's accepted and rejected counts"
        } else {
            what = "a body that is not JSON"
        }
        return "the server answered \(response.status) with \(what): not the ingest endpoint (a captive portal or a login proxy?)"
    }
}
