import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `status --json` writes a renamed field under its former name too (docs/operations.md,
/// "status --json"), with the same value, and changes nothing else in the output.
final class StatusFormerNamesTests: XCTestCase {
    func testRenamedFieldsAreWrittenUnderTheirFormerNamesToo() throws {
        let dir = try TemporaryDirectory("status-former-names")
        let path = dir.file("agent.sqlite")
        let database = try AgentDatabase(path: path)
        try database.recordQueue.enqueue(TestRecords.fix(at: Date(timeIntervalSince1970: 1_800_000_000)))
        var config = AgentConfig()
        config.storage.database = path
        config.health.enabled = false
        var status = StatusReader().read(config: config, configFile: dir.file("agent.toml"))
        status.network = .init(onMetered: "small", watchedBy: "NetworkManager", metered: true, meteredValue: "guess-yes",
                               since: Date(timeIntervalSince1970: 1_800_000_000), deferredStreams: ["microphone"], problem: nil)
        let json = try status.json()
        try StatusSchema.assertMatches(json)

        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: json) as? [String: Any])
        let streams = try XCTUnwrap(object["streams"] as? [[String: Any]])
        XCTAssertEqual(streams.count, 3)
        for stream in streams {
            XCTAssertNotNil(stream["liveness"] as? String, "\(stream)")
            XCTAssertEqual(stream["health"] as? String, stream["liveness"] as? String, "\(stream)")
        }
        XCTAssertEqual(streams.map { $0["liveness"] as? String }, ["unknown", "unknown", "disabled"])
        let uploader = try XCTUnwrap(object["uploader"] as? [String: Any])
        XCTAssertEqual(uploader["health"] as? String, uploader["liveness"] as? String)
        let network = try XCTUnwrap(object["network"] as? [String: Any])
        XCTAssertEqual(network["deferred_streams"] as? [String], ["microphone"])
        XCTAssertEqual(network["held_streams"] as? [String], ["microphone"])

        // The rest as the report encodes it: the same numbers, times and keys.
        let location = try XCTUnwrap(streams.first { $0["name"] as? String == "location" })
        XCTAssertEqual(location["pending"] as? Int, 1)
        XCTAssertEqual(network["since"] as? String, "2027-01-15T08:00:00.000Z")
        let again = try StatusReport.decode(json).json()
        XCTAssertEqual(String(decoding: again, as: UTF8.self), String(decoding: json, as: UTF8.self),
                       "the output reads back and is written again the same")
    }
}
