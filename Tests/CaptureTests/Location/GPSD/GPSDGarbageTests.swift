import AgentCore
@testable import Capture
import Foundation
import TestRigs
import XCTest

/// What a broken or hostile "gpsd" sends must not crash the agent or make records.
final class GPSDGarbageTests: XCTestCase {
    func testGarbageAndCutLinesAreSurvivedAndTheNextGoodReportCounts() throws {
        let fixTime = RFC3339.string(from: Date().addingTimeInterval(-30).rounded())
        // Deterministic noise: bytes from a linear congruential generator, newlines included.
        var seed: UInt32 = 12_345
        let noise = Data((0..<6000).map { _ -> UInt8 in
            seed = seed &* 1_103_515_245 &+ 12_345
            return UInt8(truncatingIfNeeded: seed >> 16)
        })
        let server = try ScriptedTCPServer(scripts: [
            // 1: noise, JSON that is wrong in every way, then a line longer than libgps's
            // buffer, which makes libgps give up on the connection.
            [
                .send(noise),
                .sendLine(""),
                .sendLine("{\"class\":\"VERSION\",\"release\":\"3.22\",\"proto_major\":3,\"proto_minor\":14}"),
                .sendLine("{{{{{{{{"),
                .sendLine("{\"class\":\"TPV\",\"mode\":3,\"lat\":\"north\",\"lon\":[1,2]}"),
                .sendLine("{\"class\":\"TPV\",\"mode\":3,\"time\":\"not a time\",\"lat\":52.1,\"lon\":13.1}"),
                .sendLine("{\"class\":\"TPV\",\"mode\":3,\"time\":\"\(fixTime)\",\"lat\":1e999,\"lon\":13.1}"),
                .sendLine("{\"class\":\"TPV\",\"mode\":3,\"time\":\"\(fixTime)\",\"lat\":95.0,\"lon\":13.1}"),
                .sendLine("{\"class\":\"TPV\",\"mode\":1,\"time\":\"\(fixTime)\",\"lat\":52.1,\"lon\":13.1}"),
                .sendLine("{\"class\":\"TPV\",\"mode\":3,\"time\":\"2090-01-01T00:00:00.000Z\",\"lat\":52.1,\"lon\":13.1}"),
                .sendLine("{\"class\":\"SKY\",\"satellites\":\"many\"}"),
                .send(Data(repeating: UInt8(ascii: "x"), count: 40_000)),
            ],
            // 2: drops mid-line.
            [
                .sendLine("{\"class\":\"VERSION\",\"release\":\"3.22\",\"proto_major\":3,\"proto_minor\":14}"),
                .send(Data("{\"class\":\"TPV\",\"mode\":3,\"time\":\"\(fixTime)\",\"lat\":48.8".utf8)),
                .close,
            ],
            // 3: behaves, with some fields unknown.
            [
                .sendLine("{\"class\":\"VERSION\",\"release\":\"3.22\",\"proto_major\":3,\"proto_minor\":14}"),
                .sendLine("{\"class\":\"SKY\",\"device\":\"/dev/fake\",\"hdop\":0.9,\"nSat\":3,\"uSat\":2,\"satellites\":["
                    + "{\"PRN\":4,\"el\":45.0,\"az\":120.0,\"ss\":40.0,\"used\":true},"
                    + "{\"PRN\":5,\"el\":30.0,\"az\":200.0,\"ss\":38.0,\"used\":true},"
                    + "{\"PRN\":9,\"el\":60.0,\"az\":45.0,\"ss\":42.0,\"used\":false}]}"),
                .sendLine("{\"class\":\"TPV\",\"device\":\"/dev/fake\",\"mode\":2,\"time\":\"\(fixTime)\","
                    + "\"lat\":48.858370000,\"lon\":2.294481000,\"speed\":1.250,\"eph\":8.500}"),
            ],
        ])
        defer { server.stop() }

        var tuning = LocationTuning()
        tuning.reconnect = Backoff(base: 0.05, cap: 0.2)
        let fixture = try LocationFixture(port: server.port, interval: 1, tuning: tuning)
        fixture.stream.start()
        try waitUntil("the good report to be recorded", timeout: 20) { try !fixture.records().isEmpty }
        fixture.stream.stop()

        XCTAssertGreaterThanOrEqual(server.connectionsAccepted, 3)
        let records = try fixture.records()
        XCTAssertEqual(records.count, 1, "only the good report makes a record: \(records)")
        let record = try XCTUnwrap(records.first)
        XCTAssertEqual(record["timestamp"] as? String, fixTime)
        XCTAssertEqual(try XCTUnwrap(record["latitude"] as? Double), 48.85837, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(record["longitude"] as? Double), 2.294481, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(record["speed"] as? Double), 1.25, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(record["horizontal_accuracy"] as? Double), 8.5, accuracy: 1e-9)
        XCTAssertEqual(record["fix_mode"] as? Int, 2)
        XCTAssertEqual(record["satellites_used"] as? Int, 2)
        // Unknown to this "gpsd" (NaN in libgps), so absent rather than 0; a 2D fix has no height.
        for key in ["altitude", "course", "vertical_accuracy"] {
            XCTAssertNil(record[key], "\(key) should be absent: \(record)")
        }
    }
}

private extension Date {
    /// Whole seconds, as gpsd's times usually are.
    func rounded() -> Date {
        Date(timeIntervalSince1970: timeIntervalSince1970.rounded(.down))
    }
}
