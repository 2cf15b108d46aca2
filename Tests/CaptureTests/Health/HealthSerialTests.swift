import AgentCore
@testable import Capture
import Foundation
import TestRigs
import XCTest

/// The serial source on a real pty pair made by socat, unplugged and plugged back.
final class HealthSerialTests: XCTestCase {
    func testReadsLinesAndRecoversAfterUnplug() throws {
        let bed = try HealthTestBed()
        let rig = try PtyRig(directory: bed.directory.path)
        let stream = bed.stream(file: rig.b, format: .keyvalue, kind: .serial, baud: 115_200)
        stream.start()
        defer { stream.stop() }
        try waitUntil("the source to open \(rig.b)") { stream.liveness().isHealthy }

        let now = Date()
        func line(_ i: Int) -> String { "ts=\(RFC3339.string(from: now.addingTimeInterval(Double(i - 100)))) steps=\(i)\r\n" }
        // A line in two writes, the way a slow UART delivers it.
        try rig.send(line(0) + line(1) + String(line(2).prefix(10)))
        try rig.send(String(line(2).dropFirst(10)) + "not a sample\n")
        try bed.waitForCount(3)
        try waitUntil("the bad line to be counted") { stream.statuses()[0].malformedLines == 1 }

        rig.unplug()
        try waitUntil("the source to notice the unplug") {
            stream.liveness().reason?.contains("went away") == true || stream.liveness().reason?.contains("not there") == true
        }
        XCTAssertFalse(stream.liveness().isHealthy)

        try rig.plug()
        try waitUntil("the source to reopen \(rig.b)", timeout: 30) { stream.liveness().isHealthy }
        try rig.send((3..<6).map(line).joined())
        try bed.waitForCount(6)
        stream.stop()

        XCTAssertEqual(try bed.values(), (0..<6).map(Double.init))
        let payload = try XCTUnwrap(bed.payloads().first)
        XCTAssertEqual((payload["metadata"] as? [String: Any])?["source"] as? String, "test-source")
        XCTAssertEqual(payload["unit"] as? String, "count")
    }

    func testSamplesWithoutTimeAreDatedWhenReceived() throws {
        let bed = try HealthTestBed()
        let rig = try PtyRig(directory: bed.directory.path)
        let stream = bed.stream(file: rig.b, format: .jsonl, kind: .serial)
        stream.start()
        defer { stream.stop() }
        try waitUntil("the source to open \(rig.b)") { stream.liveness().isHealthy }
        let before = Date()
        try rig.send(#"{"bpm":61.6}"# + "\n")
        try bed.waitForCount(1)
        let payload = try XCTUnwrap(bed.payloads().first)
        XCTAssertEqual(payload["value"] as? Int, 62)
        let time = try XCTUnwrap(RFC3339.date(from: payload["timestamp"] as? String ?? ""))
        XCTAssertGreaterThanOrEqual(time, before.addingTimeInterval(-0.001))
        XCTAssertLessThanOrEqual(time, Date())
    }

    /// A port the service user may not open: E005 with the dialout hint. The agent's
    /// tests run as root here, where nothing is refused, so the probe runs as `nobody`.
    func testPermissionDeniedIsE005WithTheDialoutHint() throws {
        let bed = try HealthTestBed()
        let device = bed.file("ttyUSB0")
        XCTAssertTrue(FileManager.default.createFile(atPath: device, contents: nil, attributes: [.posixPermissions: 0o600]))
        let output = try HealthChild.probe(kind: "serial", path: device, bed: bed)
        XCTAssertTrue(output.contains("E005"), output)
        XCTAssertTrue(output.contains("dialout"), output)

        let file = bed.file("private.jsonl")
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: nil, attributes: [.posixPermissions: 0o600]))
        let fileOutput = try HealthChild.probe(kind: "file", path: file, bed: bed)
        XCTAssertTrue(fileOutput.contains("E005") && fileOutput.contains("permission denied"), fileOutput)
    }
}

/// The test helper's health modes (`ariata-test-helper`), as a real child process.
enum HealthChild {
    /// `ariata-test-helper`, beside the test bundle.
    static func helperExecutable() throws -> String {
        try BuildProducts.executable("ariata-test-helper")
    }

    /// Runs `ariata-test-helper health-probe` and returns what it printed; as `nobody` when
    /// the tests run as root, so permissions apply.
    static func probe(kind: String, path: String, bed: HealthTestBed) throws -> String {
        let helper = try helperExecutable()
        let database = bed.file("probe-\(kind).sqlite")
        var arguments = ["health-probe", database, kind, path]
        var executable = helper
        if getuid() == 0 {
            XCTAssertEqual(chmod(bed.directory.path, 0o777), 0)
            executable = try ChildProcess.locate("setpriv")
            arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", helper] + arguments
        }
        let child = try ChildProcess(executable, arguments, name: "probe", logDirectory: bed.directory.path)
        guard child.wait(timeout: 30) == 0 else {
            throw ProbeFailed(output: child.stdout() + child.stderr())
        }
        return child.stdout()
    }

    struct ProbeFailed: Error, CustomStringConvertible {
        let output: String
        var description: String { "the probe failed: \(output)" }
    }
}
