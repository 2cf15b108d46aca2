import AgentCore
import Foundation
import Reports

/// Renders check results the same way for onboarding and doctor:
///
///     ok    gpsd at localhost:2947: gpsd 3.22 answers
///     FAIL  ALSA capture device "default": cannot open it: No such file or directory
///           fix: list capture devices with 'arecord -L' and set [microphone] device
///
/// Colour only on a terminal and never with NO_COLOR (the same rule as `status`).
public struct CheckPrinter: Sendable {
    public var colour: Bool

    public init(colour: Bool = StatusText.wantsColour()) {
        self.colour = colour
    }

    public func render(_ check: DeviceCheck) -> String {
        let tag: String
        switch check.outcome {
        case .ok: tag = paint("ok  ", "32")
        case .warning: tag = paint("warn", "33")
        case .failed: tag = paint("FAIL", "31;1")
        }
        var text = "  \(tag)  \(check.name): \(check.detail)\n"
        if let fix = check.fix, check.outcome != .ok {
            text += "        fix: \(fix)\n"
        }
        return text
    }

    public func render(_ checks: [DeviceCheck]) -> String {
        checks.map(render).joined()
    }

    private func paint(_ text: String, _ code: String) -> String {
        colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}
