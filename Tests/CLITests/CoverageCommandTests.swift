import AgentCore
import Foundation
import Platform
import Rigs
import TestRigs
import XCTest

/// `ariata-agent coverage` on a real queue file with a day of spans and records, in
/// Europe/Berlin (`TZ`): the terminal picture, the JSON, and the SVG rendered to PNG by a
/// real renderer (`rsvg-convert`, Debian's librsvg2-bin) whose rows and colours are read
/// back from the image (docs/operations.md, "Coverage").
///
/// `ARIATA_COVERAGE_PICTURE_OUT=docs/images/coverage.png` copies the PNG there: the
/// screenshot in docs/operations.md is made so.
final class CoverageCommandTests: XCTestCase {
    let berlin = TimeZone(identifier: "Europe/Berlin")!

    /// Monday 1 June 2026 (CEST): the moment `hh:mm` local.
    func at(_ hour: Int, _ minute: Int = 0) -> Date {
        // 2026-06-01T00:00:00+02:00
        Date(timeIntervalSince1970: 1_780_264_800 + Double(hour * 3_600 + minute * 60))
    }

    /// location: captured, no fix 12:00-18:00, captured; microphone: quiet to 07:00,
    /// captured to 20:00 (a chunk at 08:00 uploaded, one at 15:00 pending), lost 20:00-22:00,
    /// quiet from 22:00.
    func makeDay(_ dir: TemporaryDirectory) throws -> AgentCLI {
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: "[health]\nenabled = false")
        let clock = ManualClock(at(0))
        let database = try AgentDatabase(path: dir.file("agent.sqlite"), clock: clock)
        let ledger = database.coverage
        try ledger.enter(.location, .captured, at: at(0))
        try ledger.enter(.location, .noFix, at: at(12))
        try ledger.enter(.location, .captured, at: at(18))
        try ledger.enter(.microphone, .quiet, at: at(0))
        try ledger.enter(.microphone, .captured, at: at(7))
        try ledger.enter(.microphone, .lost, at: at(20))
        try ledger.enter(.microphone, .quiet, at: at(22))
        try ledger.enter(.location, .stopped, at: at(24))
        try ledger.enter(.microphone, .stopped, at: at(24))
        try database.recordQueue.enqueue(TestRecords.realistic(.microphone, at: at(8)))
        try database.recordQueue.enqueue(TestRecords.realistic(.microphone, at: at(15, 5)))
        let delivered = try XCTUnwrap(try database.recordQueue.records(stream: .microphone).first { $0.capturedAt == at(8) })
        try database.recordQueue.markDelivered([delivered.seq])
        return cli
    }

    func testTheDayAsTextJSONAndAnSVGARealRendererDraws() throws {
        let dir = try TemporaryDirectory("coverage-command")
        let cli = try makeDay(dir)
        let environment = ["TZ": "Europe/Berlin"]

        let text = try cli.run(["coverage", "--day", "2026-06-01"], environment: environment)
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("Coverage on 2026-06-01 (Europe/Berlin), one cell = 15 min"), text.stdout)
        XCTAssertTrue(text.stdout.contains("location    " + String(repeating: "#", count: 48) + String(repeating: "f", count: 24) + String(repeating: "#", count: 24)), text.stdout)
        XCTAssertTrue(text.stdout.contains("microphone  " + String(repeating: "q", count: 28) + String(repeating: "#", count: 52)
                                           + String(repeating: "X", count: 8) + String(repeating: "q", count: 8)), text.stdout)
        XCTAssertTrue(text.stdout.contains("location: captured 75 % (18h0m of 24h0m); largest gap 12:00-18:00 no fix (6h0m)"), text.stdout)
        XCTAssertTrue(text.stdout.contains("microphone: captured 54 % (13h0m of 24h0m); largest gap 00:00-07:00 quiet hours (7h0m)"), text.stdout)
        XCTAssertTrue(text.stdout.contains("legend: # captured, q quiet hours, f no fix, X lost (killed or power cut)"), text.stdout)

        let svgPath = dir.file("day.svg")
        let json = try cli.run(["coverage", "--day", "2026-06-01", "--json", "--stream", "microphone", "--svg", svgPath], environment: environment)
        XCTAssertEqual(json.status, 0, json.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(object["day"] as? String, "2026-06-01")
        XCTAssertEqual(object["cell_seconds"] as? Double, 900)
        let streams = try XCTUnwrap(object["streams"] as? [[String: Any]])
        XCTAssertEqual(streams.map { $0["stream"] as? String }, ["microphone"], "--stream")
        XCTAssertEqual((streams[0]["largest_gap"] as? [String: Any])?["seconds"] as? Double, 7 * 3_600)
        XCTAssertEqual((streams[0]["spans"] as? [[String: Any]])?.map { $0["state"] as? String }, ["quiet", "captured", "lost", "quiet"])
        XCTAssertEqual(try cli.run(["coverage", "--stream", "radio"]).status, 64, "a stream that does not exist is a usage error")

        // Both streams in the picture, rendered by rsvg-convert.
        XCTAssertEqual(try cli.run(["coverage", "--day", "2026-06-01", "--svg", svgPath], environment: environment).status, 0)
        let pngPath = dir.file("day.png")
        let render = try ChildProcess("rsvg-convert", ["--format", "png", "--output", pngPath, svgPath], name: "rsvg-convert",
                                      logDirectory: dir.path, environment: [:])
        XCTAssertEqual(render.wait(timeout: 60), 0, "rsvg-convert (librsvg2-bin, scripts/install-deps.sh): \(render.stderr())")
        let image = try PNGImage(contentsOf: pngPath)
        if let out = ProcessInfo.processInfo.environment["ARIATA_COVERAGE_PICTURE_OUT"] {
            try? FileManager.default.removeItem(atPath: out)
            try FileManager.default.copyItem(atPath: pngPath, toPath: out)
        }
        func x(_ hour: Double) -> Int { Int(110 + 864 * hour / 24) }
        func y(row: Int) -> Int { Int(56 + Double(row) * 38 + 14) }
        XCTAssertEqual(image.width, 1_018)
        XCTAssertEqual(image.hex(x(6), y(row: 0)), "#2e7d32", "location 06:00: captured, nothing pending")
        XCTAssertEqual(image.hex(x(15), y(row: 0)), "#ec407a", "location 15:00: no fix")
        XCTAssertEqual(image.hex(x(3), y(row: 1)), "#3f51b5", "microphone 03:00: quiet hours")
        XCTAssertEqual(image.hex(x(8.1), y(row: 1)), "#2e7d32", "microphone 08:00: its chunk uploaded")
        XCTAssertEqual(image.hex(x(15.1), y(row: 1)), "#a5d6a7", "microphone 15:00: its chunk pending")
        XCTAssertEqual(image.hex(x(21), y(row: 1)), "#000000", "microphone 21:00: lost")
        XCTAssertEqual(image.hex(x(23), y(row: 1)), "#3f51b5", "microphone 23:00: quiet hours")
        XCTAssertEqual(image.hex(x(12), y(row: 2) + 20), "#ffffff", "no third row")
    }
}
