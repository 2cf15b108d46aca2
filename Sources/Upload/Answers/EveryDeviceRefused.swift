import AgentCore
import Foundation

/// A 401 that refuses every device rather than this device's token: Virtues' release of
/// 2026-02 put `/ingest` and the device routes behind its web login by mistake, and that
/// login check answers exactly `{"error":"Unauthorized"}` (a wrong device token gets
/// "Invalid or revoked device token" from both server generations). A new token cannot
/// help there, so the agent says what it is (docs/upload.md, answers).
public enum EveryDeviceRefused {
    /// The body of the web login's refusal.
    public static let body = ServerIdentity.loginWallBody

    public static let explanation = "\(ServerIdentity.everyDeviceRefused), not just this token: \(body) is its web login check in front of the device routes (a Virtues release of 2026-02 has it by mistake; its own phone app is refused too)"

    public static let hint = "nothing to change on this device: update the server (or ask its administrator); the agent keeps its token and its records, and uploads resume once the server lets devices in"

    /// True for a 401 whose body is a JSON object holding only `"error": "Unauthorized"`.
    public static func matches(_ response: HTTPResponse) -> Bool {
        guard response.status == 401,
              let object = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any] else { return false }
        return object.count == 1 && (object["error"] as? String) == "Unauthorized"
    }
}
