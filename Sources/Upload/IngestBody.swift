import AgentCore
import Foundation

/// The request body of one batch, exactly as the contract shapes it:
/// `{"source":"linux","stream":…,"device_id":…,"records":[…],"timestamp":…,
/// "checkpoint":null,"batch_metadata":{…}}`.
///
/// Each stored payload already is its record's JSON object, so `records` is built by
/// joining the stored bytes with commas: an 80 KB audio record is copied once into the
/// body and never decoded or re-encoded.
public enum IngestBody {
    /// Bytes the envelope adds around the records (a generous bound: the fixed keys,
    /// a 36-byte id, the timestamp and a device id of up to 256 bytes escaped).
    public static let envelopeAllowance = 1_024

    public static func build(stream: StreamName, deviceID: String, records: [QueuedRecord],
                             batchID: UUID, timestamp: Date) -> Data {
        let payloadBytes = records.reduce(0) { $0 + $1.payload.count }
        var body = Data(capacity: payloadBytes + records.count + envelopeAllowance)
        body.append(contentsOf: #"{"source":"linux","stream":"#.utf8)
        appendString(stream.wireName, to: &body)
        body.append(contentsOf: #","device_id":"#.utf8)
        appendString(deviceID, to: &body)
        body.append(contentsOf: #","records":["#.utf8)
        for (index, record) in records.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(record.payload)
        }
        body.append(contentsOf: #"],"timestamp":"#.utf8)
        appendString(RFC3339.string(from: timestamp), to: &body)
        body.append(contentsOf: #","checkpoint":null,"batch_metadata":{"total_records":"#.utf8)
        body.append(contentsOf: String(records.count).utf8)
        body.append(contentsOf: #","app_version":"#.utf8)
        appendString(AgentVersion.string, to: &body)
        body.append(contentsOf: #","batch_id":"#.utf8)
        appendString(batchID.uuidString.lowercased(), to: &body)
        body.append(contentsOf: "}}".utf8)
        return body
    }

    /// The POST of a body with the contract's headers (gzip-compressed when configured).
    /// `User-Agent` is set by the transport.
    public static func request(settings: ServerSettings, body: Data, batchID: UUID) throws -> HTTPRequest {
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"),
            ("X-Device-Token", settings.token.value),
            ("Authorization", "Bearer \(settings.token.value)"),
            ("X-Batch-Id", batchID.uuidString.lowercased()),
        ]
        var wire = body
        if settings.gzip {
            wire = try Gzip.compress(body)
            headers.append(("Content-Encoding", "gzip"))
        }
        return HTTPRequest(url: settings.ingestURL, headers: headers, body: wire)
    }

    /// The payload bound to ask the queue for so that a whole body stays within
    /// `maxBodyBytes` (a single record larger than that is still sent alone).
    public static func payloadBudget(maxBodyBytes: Int, maxRecords: Int) -> Int {
        max(1, maxBodyBytes - envelopeAllowance - maxRecords)
    }

    /// A JSON string literal, escaped as a record's strings are (`RecordJSON`).
    static func appendString(_ string: String, to body: inout Data) {
        var literal = ""
        RecordJSON.appendString(string, to: &literal)
        body.append(contentsOf: literal.utf8)
    }
}
