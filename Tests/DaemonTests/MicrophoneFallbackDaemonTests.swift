import AgentCore
import Foundation
import TestRigs
import XCTest

/// The real daemon with its chosen microphone missing: `[microphone] device` names a
/// device ALSA does not have, `fallback_device` the rig's FIFO-fed one. Capture goes on
/// from the fallback, its chunks reach the receiver, and `status` (text and `--json`,
/// valid against docs/status.schema.json) says which device is in use and why.
final class MicrophoneFallbackDaemonTests: XCTestCase {
    func testAMissingChosenDeviceCapturesFromTheFallbackAndStatusSaysSo() throws {
        let missing = "ariata_unplugged_mic"
        let rig = try DaemonRig(chunkSeconds: 5, overlapSeconds: 1, healthInterval: 1, locationEnabled: false,
                                microphoneConfig: "fallback_device = \"\(DaemonRig.feedDevice)\"", microphoneDevice: missing)
        try rig.startAgent()
        defer { _ = rig.stopAgent() }
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        var device: StatusReport.CaptureDevice?
        try waitUntil("status to show the fallback in use", timeout: 60) {
            let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
            device = report.streams.first { $0.name == "microphone" }?.device
            return device?.inUse == DaemonRig.feedDevice
        }
        let shown = try XCTUnwrap(device)
        XCTAssertEqual(shown.chosen, missing)
        XCTAssertTrue(shown.onFallback)
        XCTAssertTrue(shown.reason.contains("the chosen device '\(missing)' is missing"), shown.reason)
        XCTAssertNotNil(shown.since)
        try assertMatchesSchema(try cli.run(["status", "--json"]).stdout, in: rig.directory)
        let text = try cli.run(["status"]).stdout
        XCTAssertTrue(text.contains("microphone: capturing from '\(DaemonRig.feedDevice)' (fallback: the chosen device '\(missing)' is missing"), text)

        try waitUntil("two chunks from the fallback at the receiver", timeout: 60) {
            (try rig.receiver.stats().records["microphone"] ?? 0) >= 2
        }
        let log = rig.agentLog
        XCTAssertEqual(log.components(separatedBy: "microphone switched to '\(DaemonRig.feedDevice)'").count - 1, 1,
                       "the switch is logged once, not at every retry of the chosen device\n\(log)")
    }
}
