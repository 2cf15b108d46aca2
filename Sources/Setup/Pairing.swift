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

/// Exchanges the short pairing code the server's web UI shows for the device's token
/// (`POST {endpoint}/api/devices/pairing/complete`), as the Ariata phone app does.
public struct PairingClient: Sendable {
    public static let path = "/api/devices/pairing/complete"

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
        /// The server answered and did not pair: an invalid, used or expired code.
        case refused(message: String)
        /// No pairing answer: the network, TLS, or not a server that pairs.
        case failed(message: String, hint: String)
    }

    public var server: ServerConfig
    public var timeout: Int

    public init(server: ServerConfig, timeout: Int? = nil) {
        self.server = server
        self.timeout = max(1, timeout ?? server.requestTimeout)
    }

    public func pair(code: String, device: DeviceInfo) -> Outcome {
        if let problem = ServerVerifier.urlProblem(server.endpoint) {
            return .failed(message: problem, hint: "give the server's base URL, e.g. https://ariata.example.org")
        }
        var base = server.endpoint
        while base.hasSuffix("/") { base.removeLast() }
        let url = base + Self.path
        struct Body: Encodable {
            var code: String
            var device_info: DeviceInfo
        }
        let result = ServerRequest.send(server: server, timeout: timeout) { _ in
            HTTPRequest(url: url, headers: [("Content-Type", "application/json")],
                        body: try JSONEncoder().encode(Body(code: code, device_info: device)))
        }
        switch result {
        case .failure(let failure):
            let judged = ServerVerifier.judge(failure, url: url, timeout: timeout, elapsed: 0)
            return .failed(message: judged.message, hint: judged.hint ?? "check the endpoint")
        case .success(let response):
            return Self.judge(response, url: url)
        }
    }

    static func judge(_ response: HTTPResponse, url: String) -> Outcome {
        struct Answer: Decodable {
            struct Stream: Decodable { var name: String }
            var source_id: String?
            var device_token: String
            var available_streams: [Stream]?
        }
        struct Refusal: Decodable { var error: String }
        switch response.status {
        case 200..<300:
            guard let answer = try? JSONDecoder().decode(Answer.self, from: response.body), !answer.device_token.isEmpty else {
                return .failed(message: "HTTP \(response.status) from \(url), but not a pairing answer (no device_token)",
                               hint: "check the endpoint: it must be your Ariata server's base URL")
            }
            return .paired(Paired(token: Secret(answer.device_token), sourceID: answer.source_id,
                                  availableStreams: (answer.available_streams ?? []).map(\.name)))
        case 400..<500 where response.status != 404 && response.status != 405:
            let said = (try? JSONDecoder().decode(Refusal.self, from: response.body))?.error
                ?? String(decoding: response.body.prefix(200), as: UTF8.self)
            return .refused(message: "the server did not accept the pairing code (HTTP \(response.status): \(said))")
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
