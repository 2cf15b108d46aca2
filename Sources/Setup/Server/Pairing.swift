import AgentCore
import Foundation
import Upload

/// What the device tells the server about itself when it pairs.
public struct DeviceInfo: Sendable, Equatable, Encodable {
    public var deviceID: String
    public var deviceName: String
    public var deviceModel: String
    public var osVersion: String
    public var appVersion: String

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id", deviceName = "device_name", deviceModel = "device_model"
        case osVersion = "os_version", appVersion = "app_version"
    }

    /// This machine: the board's model from the device tree (a Raspberry Pi says "Raspberry
    /// Pi 4 Model B Rev 1.4"), else the laptop's from DMI; the OS from os-release.
    public static func current(deviceID: String, deviceName: String, root: String = "") -> DeviceInfo {
        DeviceInfo(deviceID: deviceID, deviceName: deviceName, deviceModel: model(root: root),
                   osVersion: osVersion(root: root), appVersion: "ariata-agent \(AgentVersion.string)")
    }

    static func model(root: String) -> String {
        func read(_ path: String) -> String? {
            guard let data = FileManager.default.contents(atPath: root + path) else { return nil }
            // The device tree's strings end in NUL.
            let text = String(decoding: data.prefix { $0 != 0 }, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return text.isEmpty ? nil : text
        }
        if let board = read("/proc/device-tree/model") ?? read("/sys/firmware/devicetree/base/model") { return board }
        let vendor = read("/sys/class/dmi/id/sys_vendor")
        let product = read("/sys/class/dmi/id/product_name")
        let dmi = [vendor, product].compactMap { $0 }.joined(separator: " ")
        if !dmi.isEmpty { return dmi }
        var name = utsname()
        uname(&name)
        let machine = withUnsafeBytes(of: &name.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return "Linux \(machine)"
    }

    static func osVersion(root: String) -> String {
        for path in ["/etc/os-release", "/usr/lib/os-release"] {
            guard let text = try? String(contentsOfFile: root + path, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where line.hasPrefix("PRETTY_NAME=") {
                return line.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"' "))
            }
        }
        return "Linux"
    }
}

/// Asks the server for the device's token in one of the two pairing flows the servers
/// offer (docs/install.md, Pairing and linking): the short pairing code the Ariata web UI
/// shows (`POST {endpoint}/api/devices/pairing/complete`, as the Ariata phone app does),
/// or the pending source of a Virtues QR code
/// (`POST {endpoint}/api/devices/pairing/{source_id}/complete`, as the Virtues phone app does).
public struct PairingClient: Sendable {
    public static let path = "/api/devices/pairing/complete"

    /// The path that completes the pending source `sourceID` (Virtues' QR flow).
    public static func path(sourceID: String) -> String { "/api/devices/pairing/\(sourceID)/complete" }

    public struct Paired: Sendable, Equatable {
        public var token: Secret
        public var sourceID: String?
        /// The stream names (wire names) the server lets this device push.
        public var availableStreams: [String]

        /// The agent's wire names the server did not list.
        public var missingStreams: [String] {
            StreamName.allCases.map(\.wireName).filter { !availableStreams.contains($0) }
        }
    }

    public enum Outcome: Sendable, Equatable {
        case paired(Paired)
        /// The server answered and did not pair: an invalid, used or expired code or session.
        case refused(message: String)
        /// A Virtues server: it no longer takes pairing codes and links devices by their id.
        case linksByID(message: String)
        /// No pairing answer: the network, TLS, or not a server that pairs.
        case failed(message: String, hint: String)
    }

    public var server: ServerConfig
    public var timeout: Int

    public init(server: ServerConfig, timeout: Int? = nil) {
        self.server = server
        self.timeout = max(1, timeout ?? server.requestTimeout)
    }

    /// Codes are upper case and the servers compare them exactly: one typed in lower
    /// case, or with spaces around it, is sent as the web UI shows it.
    public static func normalized(code: String) -> String {
        code.trimmingCharacters(in: .whitespacesAndNewlines).uppercased()
    }

    /// The Ariata flow: the code from the web UI.
    public func pair(code: String, device: DeviceInfo) -> Outcome {
        struct Body: Encodable {
            var code: String
            var device_info: DeviceInfo
        }
        return post(Self.path, Body(code: Self.normalized(code: code), device_info: device), sessionRoute: false)
    }

    /// The Virtues QR flow: the pending source the web UI's QR code names.
    public func complete(sourceID: String, device: DeviceInfo) -> Outcome {
        struct Body: Encodable {
            var device_id: String
            var device_info: DeviceInfo
        }
        return post(Self.path(sourceID: sourceID), Body(device_id: device.deviceID, device_info: device), sessionRoute: true)
    }

    /// - Parameter sessionRoute: the path names a pairing session, so a 404 that says so in
    ///   JSON is a refusal (an unknown session), not a missing endpoint.
    private func post(_ path: String, _ body: some Encodable, sessionRoute: Bool) -> Outcome {
        if let problem = ServerVerifier.urlProblem(server.endpoint) {
            return .failed(message: problem, hint: "give the server's base URL, e.g. https://ariata.example.org")
        }
        var base = server.endpoint
        while base.hasSuffix("/") { base.removeLast() }
        let url = base + path
        let result = ServerRequest.send(server: server, timeout: timeout) { _ in
            HTTPRequest(url: url, headers: [("Content-Type", "application/json")], body: try JSONEncoder().encode(body))
        }
        switch result {
        case .failure(let failure):
            let judged = ServerVerifier.judge(failure, url: url, timeout: timeout, elapsed: 0)
            return .failed(message: judged.message, hint: judged.hint ?? "check the endpoint")
        case .success(let response):
            return Self.judge(response, url: url, sessionRoute: sessionRoute)
        }
    }

    static func judge(_ response: HTTPResponse, url: String, sessionRoute: Bool = false) -> Outcome {
        let said = PairingAnswer.error(in: response.body)
        switch response.status {
        case 200..<300:
            guard let answer = PairingAnswer(response.body) else {
                return .failed(message: "HTTP \(response.status) from \(url), but not a pairing answer (no device_token)",
                               hint: "check the endpoint: it must be your server's base URL")
            }
            return .paired(Paired(token: answer.token, sourceID: answer.sourceID, availableStreams: answer.streams))
        case 401 where EveryDeviceRefused.matches(response):
            return .failed(message: "HTTP 401: \(EveryDeviceRefused.explanation)",
                           hint: "no device can pair with it: update the server (or ask its administrator), then run onboard again")
        case 400 where said?.contains("Pairing code flow is deprecated") == true:
            return .linksByID(message: "the server no longer takes pairing codes (HTTP 400: \(said ?? ""))")
        case 404 where sessionRoute && said != nil:
            return .refused(message: "the server has no such pairing session (HTTP 404: \(said ?? ""))")
        case 400..<500 where response.status != 404 && response.status != 405:
            let words = said ?? String(decoding: response.body.prefix(200), as: UTF8.self)
            return .refused(message: "the server did not accept the pairing \(sessionRoute ? "session" : "code") (HTTP \(response.status): \(words))")
        case 404, 405:
            return .failed(message: "this server has no pairing endpoint at \(url) (HTTP \(response.status))",
                           hint: "an older server, or a wrong endpoint: pair with a device token from the server's device page instead (--token-file)")
        case 500..<600:
            return .failed(message: "\(AgentErrorCode.serverError.rawValue) the server failed (HTTP \(response.status))",
                           hint: "try again in a moment; if it persists, check the server's logs")
        default:
            return .failed(message: "unexpected answer HTTP \(response.status) from \(url)", hint: "check the endpoint")
        }
    }
}

/// A pairing answer of either server generation: `device_token` (the one thing that
/// makes it a pairing answer), `source_id`, and the stream names of `available_streams`,
/// which Ariata lists as `{"name": ...}` and Virtues as `{"descriptor": {"name": ...}, ...}`.
/// An entry of neither shape is skipped, never a reason to drop the token.
struct PairingAnswer: Equatable {
    var token: Secret
    var sourceID: String?
    var streams: [String]

    init?(_ body: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let token = object["device_token"] as? String, !token.isEmpty else { return nil }
        self.token = Secret(token)
        sourceID = object["source_id"] as? String
        streams = (object["available_streams"] as? [Any] ?? []).compactMap(Self.streamName)
    }

    static func streamName(_ entry: Any) -> String? {
        guard let stream = entry as? [String: Any] else { return nil }
        if let name = stream["name"] as? String { return name }
        return (stream["descriptor"] as? [String: Any])?["name"] as? String
    }

    /// The `error` of a JSON refusal.
    static func error(in body: Data) -> String? {
        ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["error"] as? String
    }
}

/// What a Virtues web UI's pairing QR code holds: `{"e": "<endpoint>", "s": "<source id>"}`.
/// `onboard --source-id` takes the whole text as well as the bare id, so what a phone
/// read can be pasted as it is. The endpoint may end in `/api` (the server's
/// `apiEndpoint`); the base URL is what comes before.
public struct PairingQRCode: Sendable, Equatable {
    public var endpoint: String?
    public var sourceID: String

    public init(endpoint: String?, sourceID: String) {
        self.endpoint = endpoint
        self.sourceID = sourceID
    }

    /// Nil when `text` is not such a JSON object.
    public init?(text: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let source = object["s"] as? String, !source.isEmpty else { return nil }
        sourceID = source
        endpoint = (object["e"] as? String).map { e in
            var base = e
            while base.hasSuffix("/") { base.removeLast() }
            if base.hasSuffix("/api") { base.removeLast(4) }
            return base
        }
    }
}
