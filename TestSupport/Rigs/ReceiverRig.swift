import AgentCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// The reference ingest receiver (tools/ingest-receiver/receiver.py) as a real child
/// process on 127.0.0.1, with its control API: faults to inject, and what it stored.
public final class ReceiverRig: @unchecked Sendable {
    // @unchecked: `process` is only replaced by start()/stop(), which a test calls from
    // one thread; everything else is immutable.

    /// Counters of `GET /_control/stats`.
    public struct Stats: Decodable, Sendable {
        public var requests: Int
        /// Ingest requests begun and not yet answered (a `hang` fault, say).
        public var in_flight: Int
        public var statuses: [String: Int]
        public var records: [String: Int]
        /// Records the client sent again after they were stored.
        public var duplicates: Int
        /// Copies of records already stored that the receiver's own prefix buffer stored
        /// (`--on-bad-record buffer-prefix`: Ariata's raw archive holds those twice).
        public var buffered_duplicates: Int
        /// Records waiting in the prefix buffer, per stream (wire names).
        public var buffered: [String: Int]
        public var repeated_batch_ids: Int
        public var faults_pending: [String]
        /// Box mode: records stored that the older servers would have refused (a heart rate of
        /// 400, a 1970 timestamp); the box stores them (`payloadProblems` says why).
        public var invalid_records: Int?
        /// Box mode: records stored that the box's ios_ingest transforms write no row for.
        public var box_unread: Int?

        /// Records stored for `stream` (the receiver counts by wire name).
        public func stored(_ stream: StreamName) -> Int { records[stream.wireName] ?? 0 }
    }

    /// One ingest request as the receiver saw it (`GET /_control/requests`).
    public struct Request: Decodable, Sendable {
        public var at: Double
        public var stream: String?
        public var batch_id: String?
        public var records: Int
        public var record_ids: [String?]
        /// The JSON body after gzip decoding; `wire_bytes` as sent.
        public var body_bytes: Int
        public var wire_bytes: Int
        public var encoding: String?
        public var user_agent: String?
        public var content_type: String?
        /// The client's TCP port: equal ports mean one reused connection.
        public var client_port: Int
        public var fault: String?
        /// The answer's counts, when it was the ingest answer.
        public var accepted: Int?
        public var rejected: Int?
        public var statusText: String

        enum CodingKeys: String, CodingKey {
            case at, stream, batch_id, records, record_ids, body_bytes, wire_bytes, encoding, user_agent,
                 content_type, client_port, fault, status, accepted, rejected
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            at = try c.decode(Double.self, forKey: .at)
            stream = try c.decodeIfPresent(String.self, forKey: .stream)
            batch_id = try c.decodeIfPresent(String.self, forKey: .batch_id)
            records = try c.decode(Int.self, forKey: .records)
            record_ids = try c.decode([String?].self, forKey: .record_ids)
            body_bytes = try c.decode(Int.self, forKey: .body_bytes)
            wire_bytes = try c.decode(Int.self, forKey: .wire_bytes)
            encoding = try c.decodeIfPresent(String.self, forKey: .encoding)
            user_agent = try c.decodeIfPresent(String.self, forKey: .user_agent)
            content_type = try c.decodeIfPresent(String.self, forKey: .content_type)
            client_port = try c.decode(Int.self, forKey: .client_port)
            fault = try c.decodeIfPresent(String.self, forKey: .fault)
            accepted = try c.decodeIfPresent(Int.self, forKey: .accepted)
            rejected = try c.decodeIfPresent(Int.self, forKey: .rejected)
            // A number for an HTTP answer, a word ("reset", "hang") for a fault without one.
            if let number = try? c.decode(Int.self, forKey: .status) {
                statusText = String(number)
            } else {
                statusText = (try? c.decode(String.self, forKey: .status)) ?? "?"
            }
        }

        public var status: Int? { Int(statusText) }
    }

    public struct ControlError: Error, CustomStringConvertible {
        public let description: String
    }

    public static let script = Repository.path("tools/ingest-receiver/receiver.py")

    /// python3's absolute path, searched here because this branch's base had a
    /// ChildProcess.locate that split PATH wrongly (fixed on main since; after the merge
    /// `ChildProcess.locate("python3")` would do the same).
    static func python() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let candidates = path.split(separator: ":").map { "\($0)/python3" } + ["/usr/bin/python3", "/bin/python3"]
        guard let found = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw NotInstalled(program: "python3")
        }
        return found
    }

    public private(set) var port: Int
    public let token: String
    /// The address it listens on: 127.0.0.1, or a test host's address on a veth that a
    /// network namespace test made (`NetworkNamespaceRig`).
    public let host: String
    public let logDirectory: String
    /// Certificate and key when it serves HTTPS. The control API is then HTTPS too, which
    /// this rig does not speak: a TLS receiver is checked through the agent's side.
    public let tls: (certificate: String, key: String)?
    private let arguments: [String]
    private var process: ChildProcess?

    /// Starts the receiver on `port` (a free one when nil) and waits until it answers.
    /// - Parameters:
    ///   - arguments: more receiver options (`--fault`, `--reject-status`, `--inflate`, ...).
    ///   - strict: the receiver's `--strict`, the contract's checks that no server makes
    ///     (the agent's tests hold it to the contract); false plays the servers' leniency.
    public init(logDirectory: String, token: String = "test-token", host: String = "127.0.0.1", port: Int? = nil,
                arguments: [String] = [], strict: Bool = true,
                tls: (certificate: String, key: String)? = nil, start: Bool = true) throws {
        self.token = token
        self.host = host
        self.logDirectory = logDirectory
        self.arguments = (strict ? ["--strict"] : []) + arguments
        self.tls = tls
        self.port = try port ?? FreePort.find()
        if start { try self.start() }
    }

    deinit { process?.stop(grace: 2) }

    /// `http://127.0.0.1:<port>` (https with TLS): what goes into `[server] endpoint`.
    public var endpoint: String { "\(tls == nil ? "http" : "https")://\(host):\(port)" }
    public var isRunning: Bool { process?.isRunning ?? false }

    /// Starts it (again, on the same port) and waits until it listens (and, without TLS,
    /// until its control API answers).
    public func start() throws {
        guard !isRunning else { return }
        let portFile = "\(logDirectory)/receiver-\(port).port"
        try? FileManager.default.removeItem(atPath: portFile)
        var options = [Self.script, "--host", host, "--port", String(port), "--port-file", portFile, "--token", token]
        if let tls { options += ["--tls-cert", tls.certificate, "--tls-key", tls.key] }
        let child = try ChildProcess(try Self.python(), options + arguments, name: "receiver", logDirectory: logDirectory)
        process = child
        do {
            try waitUntil("the ingest receiver to listen on \(port)", timeout: 30) {
                guard child.isRunning else {
                    throw ControlError(description: "the receiver exited: \(child.stderr())")
                }
                guard FileManager.default.fileExists(atPath: portFile) else { return false }
                return tls != nil || (try? get("/_control/health")) != nil
            }
        } catch {
            child.stop(grace: 1)
            throw error
        }
    }

    /// Stops it (SIGTERM); the port refuses connections afterwards.
    public func stop() {
        process?.stop(grace: 5)
        process = nil
    }

    public var stderr: String { process?.stderr() ?? "" }

    // MARK: Control API

    public func addFaults(_ specs: [String]) throws {
        _ = try send("POST", "/_control/faults", body: ["faults": specs])
    }

    public func clearFaults() throws {
        _ = try send("DELETE", "/_control/faults", body: nil)
    }

    /// Changes the accepted token, the answer to a bad record (200 or 422), the body limit,
    /// the device connection's push streams (wire names; a stream not among them has every
    /// record refused, like the Ariata server).
    /// `onBadRecord`: `refuse`, `store-good` or `buffer-prefix` (see the receiver's help);
    /// `nameErrors` false leaves the refused records' ids out of its answers.
    public func configure(token: String? = nil, rejectStatus: Int? = nil, maxBodyBytes: Int? = nil,
                          streams: [String]? = nil, onBadRecord: String? = nil, nameErrors: Bool? = nil) throws {
        var body: [String: Any] = [:]
        if let onBadRecord { body["on_bad_record"] = onBadRecord }
        if let nameErrors { body["name_errors"] = nameErrors }
        if let streams { body["streams"] = streams }
        if let token { body["token"] = token }
        if let rejectStatus { body["reject_status"] = rejectStatus }
        if let maxBodyBytes { body["max_body_bytes"] = maxBodyBytes }
        _ = try send("POST", "/_control/config", body: body)
    }

    /// Makes a one-time pairing code, valid for `ttl` seconds (negative: already expired).
    public func addPairingCode(_ code: String, ttl: TimeInterval = 600) throws {
        _ = try send("POST", "/_control/pairing", body: ["code": code, "ttl": ttl])
    }

    /// The `device_info` of each device that paired, in order.
    public func pairings() throws -> [[String: String]] {
        struct Paired: Decodable {
            struct Entry: Decodable { var device_info: [String: String] }
            var paired: [Entry]
        }
        return try JSONDecoder().decode(Paired.self, from: get("/_control/pairings")).paired.map(\.device_info)
    }

    // Virtues mode (`arguments: ["--generation", "virtues"]`): linking by device id.

    /// Links `deviceID` as the web UI's link page does (`POST /api/devices/pairing/link`):
    /// from then on it is a token.
    public func link(deviceID: String, name: String = "linked by the test") throws {
        _ = try send("POST", "/api/devices/pairing/link", body: ["device_id": deviceID, "name": name, "device_type": "ios"])
    }

    /// A QR code's pending source, completed by `POST /api/devices/pairing/{id}/complete`
    /// within `ttl` seconds (negative: already expired); its source id.
    public func addPendingPairing(sourceID: String? = nil, ttl: TimeInterval = 600) throws -> String {
        var body: [String: Any] = ["ttl": ttl]
        if let sourceID { body["source_id"] = sourceID }
        struct Made: Decodable { var source_id: String }
        return try JSONDecoder().decode(Made.self, from: send("POST", "/_control/pending-pairing", body: body)).source_id
    }

    /// The 2026-02 Virtues release: every device route answers 401 `{"error":"Unauthorized"}`.
    public func setLoginWall(_ on: Bool) throws {
        _ = try send("POST", "/_control/login-wall", body: ["on": on])
    }

    /// The ids linked by hand or by QR code, with how (`link`, `qr`) and the `device_info` sent.
    public func links() throws -> [(deviceID: String, how: String, deviceInfo: [String: String]?)] {
        struct Links: Decodable {
            struct Entry: Decodable { var device_id: String; var how: String; var device_info: [String: String]? }
            var linked: [Entry]
        }
        return try JSONDecoder().decode(Links.self, from: get("/_control/links")).linked.map { ($0.device_id, $0.how, $0.device_info) }
    }

    /// Changes the server's stream switches that `POST /api/devices/verify` answers with:
    /// per wire stream name `is_enabled` and `config` keys (merged), e.g.
    /// `["location": ["is_enabled": false]]`. `status` answers verify with that HTTP status
    /// instead (404: a server without the route); `clearStatus` gives the Ariata answer back.
    public func setVerify(_ streams: [String: [String: Any]] = [:], status: Int? = nil, clearStatus: Bool = false) throws {
        var body: [String: Any] = streams
        if let status { body["status"] = status } else if clearStatus { body["status"] = NSNull() }
        _ = try send("POST", "/_control/verify", body: body)
    }

    /// The HTTP statuses the receiver answered verify requests with, in order.
    public func verifyCalls() throws -> [Int] { try verifyRequests().map(\.status) }

    /// One verify request: when it was answered (seconds since 1970) and with what status.
    public struct VerifyCall: Decodable, Sendable {
        public var at: Double
        public var status: Int
    }

    public func verifyRequests() throws -> [VerifyCall] {
        struct Calls: Decodable { var calls: [VerifyCall] }
        return try JSONDecoder().decode(Calls.self, from: get("/_control/verify")).calls
    }

    /// The body the receiver answers `POST /api/devices/verify` with now.
    public func verifyAnswer() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: get("/_control/verify")) as? [String: Any]
        guard let answer = object?["answer"] as? [String: Any] else { throw ControlError(description: "no verify answer") }
        return answer
    }

    /// Records received and records read by one server generation's transforms, per wire stream.
    public struct Readable: Decodable, Sendable, Equatable {
        public var received: Int
        public var read: Int

        public init(received: Int, read: Int) {
            self.received = received
            self.read = read
        }
    }

    /// `GET /_control/readable`: per generation (`ariata`, `virtues`) and wire stream.
    public func readable() throws -> [String: [String: Readable]] {
        struct Answer: Decodable {
            var readable: [String: [String: Readable]]
            enum CodingKeys: String, CodingKey { case readable }
            init(from decoder: any Decoder) throws {
                // "archived_only" holds bare counts: read the generations only.
                let c = try decoder.container(keyedBy: CodingKeys.self)
                let all = try c.nestedContainer(keyedBy: AnyKey.self, forKey: .readable)
                var out: [String: [String: Readable]] = [:]
                for key in all.allKeys where key.stringValue != "archived_only" {
                    out[key.stringValue] = try all.decode([String: Readable].self, forKey: key)
                }
                readable = out
            }
        }
        return try JSONDecoder().decode(Answer.self, from: get("/_control/readable")).readable
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Forgets stored records, counters and faults.
    public func reset() throws {
        _ = try send("POST", "/_control/reset", body: [:])
    }

    public func stats() throws -> Stats {
        try JSONDecoder().decode(Stats.self, from: get("/_control/stats"))
    }

    public func requests() throws -> [Request] {
        struct List: Decodable { var requests: [Request] }
        return try JSONDecoder().decode(List.self, from: get("/_control/requests")).requests
    }

    /// Ingest requests of one stream.
    public func requests(stream: StreamName) throws -> [Request] {
        try requests().filter { $0.stream == stream.wireName }
    }

    /// Ids of the records stored for `stream`, in the order stored.
    public func storedIDs(_ stream: StreamName) throws -> [String] {
        struct IDs: Decodable { var ids: [String] }
        return try JSONDecoder().decode(IDs.self, from: get("/_control/records?stream=\(stream.wireName)")).ids
    }

    /// The records stored for `stream`, in the order stored, as JSON objects.
    public func payloads(_ stream: StreamName) throws -> [[String: Any]] {
        let answer = try JSONSerialization.jsonObject(with: get("/_control/payloads?stream=\(stream.wireName)")) as? [String: Any]
        guard let records = answer?["records"] as? [[String: Any]] else { throw RigFailure("/_control/payloads answered \(String(describing: answer))") }
        return records
    }

    /// How often each id of `stream` was stored, for the ids stored more than once.
    public func storedCopies(_ stream: StreamName) throws -> [String: Int] {
        struct Copies: Decodable { var copies: [String: Int] }
        return try JSONDecoder().decode(Copies.self, from: get("/_control/records?stream=\(stream.wireName)")).copies
    }

    /// Per record stored for `stream`, in the order stored: the first of the older servers'
    /// checks it fails (box mode stores such records), or nil.
    public func payloadProblems(_ stream: StreamName) throws -> [String?] {
        struct Problems: Decodable { var problems: [String?] }
        return try JSONDecoder().decode(Problems.self, from: get("/_control/payloads?stream=\(stream.wireName)")).problems
    }

    // MARK: Box mode

    // The Virtues box of 2026-09 (`--generation box`): pairing over plain HTTP on `endpoint`,
    // every device route (webhook, applet ids) over iroh to `boxEndpoint()`. The receiver
    // needs the PyPI package iroh for the python3 on PATH (pip install iroh==1.2.0), and it
    // refuses to bind its iroh endpoint while a network interface other than loopback is up:
    // run such a test inside a network namespace with only lo up (ip netns exec ...).

    /// Starts the receiver as a Virtues box on `port` (a free one when nil). `irohPort` (UDP on
    /// 127.0.0.1; nil: a free one) and `secretKey` (the endpoint's 32-byte key in hex; nil: a new
    /// one) are kept in `store` (default: a new file in `logDirectory`), so `stop()` and `start()`
    /// keep the box's EndpointId, port, paired devices and stored records, as a box restart does.
    /// - Parameter arguments: more receiver options (`--fault`, `--box-older`, `--server-version`, ...).
    public static func box(logDirectory: String, port: Int? = nil, irohPort: Int? = nil, secretKey: String? = nil,
                           store: String? = nil, arguments: [String] = [], start: Bool = true) throws -> ReceiverRig {
        var options = ["--generation", "box", "--store", store ?? "\(logDirectory)/box-\(UUID().uuidString).sqlite"]
        if let irohPort { options += ["--box-iroh-port", String(irohPort)] }
        if let secretKey { options += ["--box-secret-key", secretKey] }
        return try ReceiverRig(logDirectory: logDirectory, port: port, arguments: options + arguments, strict: false,
                               start: start)
    }

    /// The box's iroh endpoint: its EndpointId (64 lower-case hex), its UDP port on 127.0.0.1,
    /// and the direct addresses pairing hands out (`["127.0.0.1:<port>"]`).
    public struct BoxEndpoint: Decodable, Sendable {
        public var endpoint_id: String
        public var port: Int
        public var direct_addrs: [String]
    }

    public func boxEndpoint() throws -> BoxEndpoint {
        try JSONDecoder().decode(BoxEndpoint.self, from: get("/_control/box"))
    }

    /// Makes a pairing code for `POST /api/pair/consume`: 6 random digits when `code` is nil,
    /// single use (`standing`: any number of uses, like the box's rotating code), valid `ttl`
    /// seconds (negative: already expired; the box's own last 30 minutes). Returns the code.
    @discardableResult
    public func addBoxPairingCode(_ code: String? = nil, ttl: TimeInterval = 1800, standing: Bool = false) throws -> String {
        var body: [String: Any] = ["ttl": ttl, "standing": standing]
        if let code { body["code"] = code }
        struct Made: Decodable { var code: String }
        return try JSONDecoder().decode(Made.self, from: send("POST", "/_control/box/pairing", body: body)).code
    }

    /// A device the box paired, with what it sent (`GET /_control/box/devices`).
    public struct BoxDevice: @unchecked Sendable {
        // @unchecked: `deviceInfo` holds the JSON values JSONSerialization made; never mutated.
        public var deviceID: String
        public var kind: String
        public var source: String?
        public var label: String
        public var deviceInfo: [String: Any]
        /// `device_node_id` as sent.
        public var deviceNodeID: String?
        /// The key iroh reads in `deviceNodeID` (its lower-case hex), nil when it reads none.
        public var key: String?
        public var appletIDs: [String: String]
        /// Its key is on the iroh allowlist (it parses, and the device is not forgotten).
        public var allowlisted: Bool
        public var forgotten: Bool
        /// How often it paired (a re-pair with the same node id keeps the device).
        public var pairings: Int
        /// Live iroh connections from its key.
        public var connections: Int
    }

    /// The devices the box paired, in the order they first paired (forgotten ones too).
    public func boxDevices() throws -> [BoxDevice] {
        let object = try JSONSerialization.jsonObject(with: get("/_control/box/devices")) as? [String: Any]
        guard let devices = object?["devices"] as? [[String: Any]] else {
            throw ControlError(description: "/_control/box/devices answered \(String(describing: object))")
        }
        return devices.map { d in
            BoxDevice(deviceID: d["device_id"] as? String ?? "", kind: d["kind"] as? String ?? "",
                      source: d["source"] as? String, label: d["label"] as? String ?? "",
                      deviceInfo: d["device_info"] as? [String: Any] ?? [:], deviceNodeID: d["device_node_id"] as? String,
                      key: d["key"] as? String, appletIDs: d["applet_ids"] as? [String: String] ?? [:],
                      allowlisted: d["allowlisted"] as? Bool ?? false, forgotten: d["forgotten"] as? Bool ?? false,
                      pairings: d["pairings"] as? Int ?? 0, connections: d["connections"] as? Int ?? 0)
        }
    }

    /// Forgets a device, as the box revokes one: its key leaves the allowlist, so its next
    /// connection is closed with code 1 "not allowlisted", and requests on a connection it keeps
    /// get 401. `closeConnections` also closes its live connections (as a box restart would).
    /// Returns the device ids forgotten.
    @discardableResult
    public func forgetBoxDevice(deviceID: String? = nil, nodeID: String? = nil, closeConnections: Bool = false) throws -> [String] {
        var body: [String: Any] = ["close_connections": closeConnections]
        if let deviceID { body["device_id"] = deviceID }
        if let nodeID { body["device_node_id"] = nodeID }
        struct Forgotten: Decodable { var forgotten: [String] }
        return try JSONDecoder().decode(Forgotten.self, from: send("POST", "/_control/box/forget", body: body)).forgotten
    }

    /// Gives a device's ingest applet a new id (the last device paired with one when nil): the
    /// old id answers 404, `GET /api/devices/applet-ids` gives the new one.
    @discardableResult
    public func rotateApplet(deviceID: String? = nil) throws -> (old: String, new: String) {
        var body: [String: Any] = [:]
        if let deviceID { body["device_id"] = deviceID }
        struct Rotated: Decodable { var old: String; var new: String }
        let rotated = try JSONDecoder().decode(Rotated.self, from: send("POST", "/_control/box/rotate-applet", body: body))
        return (rotated.old, rotated.new)
    }

    /// Faults for the next webhook requests: the receiver's fault syntax (`slow=2`, `hang`,
    /// `reset`, `close`, `status=503,retry_after=60`, `stream=location`, `times=`), with the
    /// box's shapes for `status=409` (a body it could not read), `status=404`, `status=403`,
    /// `status=500`, and `skipped` (409 `{"run_id":null,"status":"skipped"}`).
    public func addBoxFaults(_ specs: [String]) throws {
        try addFaults(specs)
    }

    /// The faults not used yet.
    public func boxFaults() throws -> [String] {
        try stats().faults_pending
    }

    /// Changes how the box behaves. `reachTicket` false: pairing answers leave box_node_id,
    /// relay_url and box_direct_addrs out (a box whose endpoint is not up yet). `olderBox`: a box
    /// from before 2026-07-30 (`action_ids`, `GET /api/devices/action-ids`). `relayURL`: a
    /// relay_url for pairing answers (the box under test runs LAN-only, without). `runSeconds`:
    /// each run takes that long, so a second batch for the same applet meanwhile gets 409
    /// skipped. `rateLimit` false: no 429; `exemptLoopback`: 127.0.0.1 is not rate-limited,
    /// as on the box (by default the receiver counts it, playing a LAN address).
    public func configureBox(reachTicket: Bool? = nil, olderBox: Bool? = nil, relayURL: String? = nil,
                             runSeconds: Double? = nil, rateLimit: Bool? = nil, exemptLoopback: Bool? = nil,
                             maxBodyBytes: Int? = nil) throws {
        var body: [String: Any] = [:]
        if let reachTicket { body["reach_ticket"] = reachTicket }
        if let olderBox { body["ids_key"] = olderBox ? "action_ids" : "applet_ids" }
        if let relayURL { body["relay_url"] = relayURL }
        if let runSeconds { body["run_seconds"] = runSeconds }
        if let rateLimit { body["rate_limit"] = rateLimit }
        if let exemptLoopback { body["exempt_loopback"] = exemptLoopback }
        if let maxBodyBytes { body["max_body_bytes"] = maxBodyBytes }
        _ = try send("POST", "/_control/box/config", body: body)
    }

    /// What the box saw besides webhook requests (those are in `requests()`).
    public struct BoxActivity: Decodable, Sendable {
        public struct PairAttempt: Decodable, Sendable {
            public var at: Double
            public var ip: String?
            public var status: Int
            public var error: String?
            public var device_id: String?
        }
        public struct Peer: Decodable, Sendable {
            public var at: Double
            public var peer: String?
            public var device_id: String?
        }
        /// Every `POST /api/pair/consume`, in order.
        public var pair_attempts: [PairAttempt]
        /// Connections closed with code 1 "not allowlisted", in order.
        public var refused_connections: [Peer]
        /// Requests abandoned because the client ended its sending side before the answer.
        public var aborted: Int
        /// `GET /api/devices/applet-ids` requests, in order (device_id nil: answered 401).
        public var applet_ids_calls: [Peer]
        /// Applets with a run in progress.
        public var running: [String]
        /// Live iroh connections per key.
        public var live_connections: [String: Int]
    }

    public func boxActivity() throws -> BoxActivity {
        try JSONDecoder().decode(BoxActivity.self, from: get("/_control/box"))
    }

    /// A row the box writes for a microphone record (`applets/ios_ingest/microphone.rs`):
    /// no `audio_url` for a record without audio, `metadata.muted_by` for a muted span.
    public struct BoxRecording: Decodable, Sendable, Equatable {
        public struct Metadata: Decodable, Sendable, Equatable {
            public var muted_by: String?
        }
        public var id: String
        public var started_at: String?
        public var ended_at: String?
        public var duration_seconds: Double?
        public var audio_url: String?
        public var is_silent: Bool
        public var average_db_level: Double?
        public var metadata: Metadata
    }

    /// `GET /_control/box/recordings`: the box's audio rows, in the order stored.
    public func boxRecordings() throws -> [BoxRecording] {
        struct Answer: Decodable { var recordings: [BoxRecording] }
        return try JSONDecoder().decode(Answer.self, from: get("/_control/box/recordings")).recordings
    }

    private func get(_ path: String) throws -> Data {
        try send("GET", path, body: nil)
    }

    private func send(_ method: String, _ path: String, body: [String: Any]?) throws -> Data {
        guard let url = URL(string: endpoint + path) else { throw ControlError(description: "bad path \(path)") }
        var request = URLRequest(url: url, timeoutInterval: 10)
        request.httpMethod = method
        if let body { request.httpBody = try JSONSerialization.data(withJSONObject: body) }
        let outcome = Mutex<Result<Data, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, error in
            let result: Result<Data, any Error>
            if let error {
                result = .failure(error)
            } else if let status = (response as? HTTPURLResponse)?.statusCode, status != 200 {
                result = .failure(ControlError(description: "\(method) \(path): HTTP \(status) \(String(decoding: data ?? Data(), as: UTF8.self))"))
            } else {
                result = .success(data ?? Data())
            }
            outcome.withLock { $0 = result }
            done.signal()
        }.resume()
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw ControlError(description: "no answer") }
        return try result.get()
    }
}
