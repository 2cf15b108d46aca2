import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// The real daemon with its chosen microphone missing: `[microphone] device` names a
/// device ALSA does not have, `fallback_device` the rig's FIFO-fed one. Capture goes on
/// from the fallback, its chunks reach the receiver, and `status` (text and `--json`,
/// valid against docs/status.schema.json) says which device is in use and why. Then the
/// chosen device appears (defined in the ALSA configuration, fed a tone) and is taken back.
final class MicrophoneFallbackDaemonTests: XCTestCase {
    func testAMissingChosenDeviceCapturesFromTheFallbackAndStatusSaysSo() throws {
        let missing = "ariata_unplugged_mic"
        let rig = try DaemonRig(chunkSeconds: 5, overlapSeconds: 1, checkInterval: 1, locationEnabled: false,
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
        try StatusSchema.assertMatches(Data(try cli.run(["status", "--json"]).stdout.utf8))
        let text = try cli.run(["status"]).stdout
        XCTAssertTrue(text.contains("microphone: capturing from '\(DaemonRig.feedDevice)' (fallback: the chosen device '\(missing)' is missing"), text)

        try waitUntil("two chunks from the fallback at the receiver", timeout: 60) {
            (try rig.receiver.stats().records["microphone"] ?? 0) >= 2
        }
        XCTAssertEqual(rig.agentLog.components(separatedBy: "microphone switched to '\(DaemonRig.feedDevice)'").count - 1, 1,
                       "the switch is logged once, not at every retry of the chosen device\n\(rig.agentLog)")

        // The chosen device appears: the daemon tries it every 5 s and takes it back.
        let tone = rig.directory.file("tone.raw")
        try TestSignal.write(TestSignal.tone(seconds: 30, dbfs: -20), to: tone)
        try rig.plugInDevice(missing, input: tone)
        let plugged = Date()
        try waitUntil("status to show the chosen device in use again", timeout: 30) {
            let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
            device = report.streams.first { $0.name == "microphone" }?.device
            return device?.inUse == missing
        }
        let back = Date().timeIntervalSince(plugged)
        print("microphone fallback (daemon): the chosen device in use again \(String(format: "%.1f", back)) s after it appeared, as status shows it")
        XCTAssertLessThan(back, 10, "tried every 5 s, seen by status at the next check (1 s here)")
        XCTAssertEqual(device?.onFallback, false)
        XCTAssertEqual(device?.reason, "the chosen device ([microphone] device)")
        XCTAssertTrue(try cli.run(["status"]).stdout.contains("microphone: capturing from '\(missing)'\n"))
        let log = rig.agentLog
        XCTAssertEqual(log.components(separatedBy: "microphone switched to '\(missing)': the chosen device is back").count - 1, 1, log)
        let records = try rig.receiver.stats().records["microphone"] ?? 0
        try waitUntil("chunks from the chosen device at the receiver", timeout: 30) {
            (try rig.receiver.stats().records["microphone"] ?? 0) >= records + 2
        }
    }
}
