import AgentCore
import Foundation

/// The request body of one batch, exactly as the contract shapes it:
/// `{"source":"linux","stream":…,"device_id":…,"records":[…],"timestamp":…,
/// "checkpoint":null,"batch_metadata":{…}}`.
///
/// Each stored payload already is its record's JSON object, so `records` is the stored
/// bytes joined by commas: the body's pieces are the envelope's text and the payloads
/// themselves, so an 80 KB audio record is never copied, decoded or re-encoded on its way
/// to the server.
public enum IngestBody {
    /// Bytes the envelope adds around the records (a generous bound: the fixed keys,
    /// a 36-byte id, the timestamp and a device id of up to 256 bytes escaped).
    public static let envelopeAllowance = 1_024

    /// The envelope's `source` for the older servers; a Virtues box takes only `"ios"`.
    public static let source = "linux"

    /// - Parameter box: a Virtues box's settings: the envelope says `"ios"` and a silent
    ///   chunk goes as the box's own app sends it (`BoxRecordShape`).
    public static func build(stream: StreamName, deviceID: String, records: [QueuedRecord],
                             batchID: UUID, timestamp: Date, box: BoxConfig? = nil) -> RequestBody {
        var body = RequestBody()
        var text = #"{"source":"#
        RecordJSON.appendString(box == nil ? source : "ios", to: &text)
        text += #","stream":"#
        RecordJSON.appendString(stream.wireName, to: &text)
        text += #","device_id":"#
        RecordJSON.appendString(deviceID, to: &text)
        text += #","records":["#
        for (index, record) in records.enumerated() {
            if index > 0 { text += "," }
            body.append(text)
            body.append(box.map { BoxRecordShape.payload(of: record, silentAudio: $0.silentAudio) } ?? record.payload)
            text = ""
        }
        text += #"],"timestamp":"#
        RecordJSON.appendString(RFC3339.string(from: timestamp), to: &text)
        text += #","checkpoint":null,"batch_metadata":{"total_records":"# + String(records.count)
        text += #","app_version":"#
        RecordJSON.appendString(AgentVersion.string, to: &text)
        text += #","batch_id":"#
        RecordJSON.appendString(batchID.uuidString.lowercased(), to: &text)
        text += "}}"
        body.append(text)
        return body
    }

    /// The POST of a body with the contract's headers (gzip-compressed when configured).
    /// `User-Agent` is set by the transport.
    public static func request(settings: ServerSettings, body: RequestBody, batchID: UUID) throws -> HTTPRequest {
        if settings.box != nil {
            // The box: no token (the key the transport proves is the credential), never gzip.
            return HTTPRequest(url: settings.ingestURL, headers: [("Content-Type", "application/json"),
                                                                  ("X-Batch-Id", batchID.uuidString.lowercased())], body: body)
        }
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"),
            ("X-Device-Token", settings.token.value),
            ("Authorization", "Bearer \(settings.token.value)"),
            ("X-Batch-Id", batchID.uuidString.lowercased()),
        ]
        var wire = body
        if settings.gzip {
            wire = RequestBody([try Gzip.compress(body)])
            headers.append(("Content-Encoding", "gzip"))
        }
        return HTTPRequest(url: settings.ingestURL, headers: headers, body: wire)
    }

    /// The payload bound to ask the queue for so that a whole body stays within
    /// `maxBodyBytes` (a single record larger than that is still sent alone).
    public static func payloadBudget(maxBodyBytes: Int, maxRecords: Int) -> Int {
        max(1, maxBodyBytes - envelopeAllowance - maxRecords)
    }
}
