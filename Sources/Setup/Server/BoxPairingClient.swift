import AgentCore
import Foundation
import Upload

/// Pairs this device with a Virtues box: the 6-digit code that `virtues pair` (or the
/// box's "Add device") shows, exchanged over plain HTTP on the box's LAN address for the
/// box's reach ticket (`POST {endpoint}/api/pair/consume`, the contract's section "The
/// Virtues box", Pairing). Nothing is kept here: the caller writes the answer into
/// `[box]` only when it is complete.
public struct BoxPairingClient: Sendable {
    public static let path = "/api/pair/consume"

    /// What the box gave: where it is and what this device sends to.
    public struct Paired: Sendable, Equatable {
        public var deviceID: String
        /// `applet_ids.ios_ingest` (older boxes: `action_ids.ios_ingest`).
        public var appletID: String
        public var boxNodeID: String
        public var relayURL: String?
        public var directAddresses: [String]
    }

    public enum Outcome: Sendable, Equatable {
        case paired(Paired)
        /// 401: the code is wrong, used or expired.
        case refused(message: String)
        /// 429: ten wrong codes from this address in 30 minutes; the box's wait in seconds.
        case tooManyTries(retryAfter: Int?)
        /// 200 without the reach ticket: the box's iroh endpoint is not up yet.
        case boxNotReady(message: String)
        /// No pairing answer: the network, or not a box.
        case failed(message: String, hint: String)
    }

    public var server: ServerConfig
    public var timeout: Int

    public init(server: ServerConfig, timeout: Int? = nil) {
        self.server = server
        self.timeout = max(1, timeout ?? server.requestTimeout)
    }

    /// The code as the box compares it: its digits, spaces and dashes a person typed left out.
    public static func normalized(code: String) -> String {
        String(code.filter { !$0.isWhitespace && $0 != "-" })
    }

    /// Why `code` cannot be a box's pairing code, nil when it can.
    public static func problem(code: String) -> String? {
        let digits = normalized(code: code)
        guard digits.count == 6, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            return "\"\(code)\" is not a box's pairing code: it has 6 digits (run 'virtues pair' on the box, or use Add device in its web UI)"
        }
        return nil
    }

    struct Body: Encodable {
        struct Info: Encodable {
            var device_name: String
            var os: String
            var client: String
        }
        var token: String
        var kind = "sensor"
        /// Without it, a device of any kind but `mobile_app` gets no ingest applet.
        var source = "ios"
        var label: String
        var device_info: Info
        var device_node_id: String
    }

    public func consume(code: String, key: DeviceKey, label: String) -> Outcome {
        let url = server.url(path: Self.path)
        let body = Body(token: Self.normalized(code: code), label: label,
                        device_info: .init(device_name: label, os: "linux", client: AgentVersion.userAgent),
                        device_node_id: key.endpointID)
        let result = ServerRequest.send(server: server, timeout: timeout) { _ in
            HTTPRequest(url: url, headers: [("Content-Type", "application/json")], body: try JSONEncoder().encode(body))
        }
        switch result {
        case .failure(let failure):
            let judged = ServerVerifier.judge(failure, url: url, timeout: timeout, elapsed: 0)
            return .failed(message: judged.message, hint: judged.hint ?? "check the endpoint: the box's LAN address and port 8000")
        case .success(let response):
            return Self.judge(response, url: url)
        }
    }

    static func judge(_ response: HTTPResponse, url: String) -> Outcome {
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        let error = object?["error"] as? String
        switch response.status {
        case 200..<300:
            guard let object, let deviceID = object["device_id"] as? String,
                  let applets = (object["applet_ids"] ?? object["action_ids"]) as? [String: Any] else {
                return .failed(message: "HTTP \(response.status) from \(url), but not the box's pairing answer (no device_id or applet_ids)",
                               hint: "check the endpoint: the box's LAN address and port 8000")
            }
            guard let applet = applets["ios_ingest"] as? String, !applet.isEmpty else {
                return .failed(message: "the box paired this device but gave it no ingest applet (applet_ids has no ios_ingest)",
                               hint: "update the box, then pair again with a new code")
            }
            guard let node = object["box_node_id"] as? String, !node.isEmpty else {
                return .boxNotReady(message: "the box took the code but its iroh endpoint is not up yet (no reach ticket in its answer)")
            }
            guard BoxConfig.isKeyHex(node) else {
                return .failed(message: "the box's node id \"\(node.prefix(80))\" is not an iroh EndpointId", hint: "update the box, then pair again")
            }
            let relay = (object["relay_url"] as? String).flatMap { $0.isEmpty ? nil : $0 }
            let direct = (object["box_direct_addrs"] as? [Any] ?? []).compactMap { $0 as? String }
            guard relay != nil || !direct.isEmpty else {
                return .boxNotReady(message: "the box took the code but gave neither a relay nor a direct address to reach it")
            }
            return .paired(Paired(deviceID: deviceID, appletID: applet, boxNodeID: node, relayURL: relay, directAddresses: direct))
        case 401:
            return .refused(message: "the box did not accept the code (HTTP 401: \(error ?? "invalid_or_expired_token")): it is wrong, used or expired")
        case 429:
            let wait = (object?["retry_after_secs"] as? NSNumber)?.intValue
            return .tooManyTries(retryAfter: wait)
        case 400:
            return .failed(message: "the box refused the pairing request (HTTP 400: \(error ?? "bad request"))",
                           hint: "this agent and the box disagree about pairing: update the agent or the box")
        case 500..<600:
            return .failed(message: "\(AgentErrorCode.serverError.rawValue) the box failed (HTTP \(response.status))",
                           hint: "try again in a moment; if it persists, check the box's logs")
        default:
            return .failed(message: "unexpected answer HTTP \(response.status) from \(url)",
                           hint: "check the endpoint: the box's LAN address and port 8000")
        }
    }
}
