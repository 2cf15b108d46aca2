import AgentCore
import Foundation
@testable import Upload
import XCTest

/// The uploader's memory is kept in the queue across restarts and upgrades
/// (`AgentStateKey.uploadMemory`): what an earlier version stored, with its counts as bare
/// numbers and the 429 wait under `hold`, reads back as the same waits.
final class UploaderMemoryFormatTests: XCTestCase {
    func testMemoryStoredByAnEarlierVersionReadsBackAndIsWrittenTheSameWay() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let later = now.addingTimeInterval(600).timeIntervalSinceReferenceDate
        let stored = """
            {"server":"abc","retries":{"location":{"failures":2,"nextAttemptAt":\(later),"reason":"HTTP 500","serverAsked":false}},
             "refusals":{"health":{"schedule":{"base":300,"cap":3600,"factor":2,"jitter":0},"refusals":3,"until":\(later)}},
             "breaker":{"threshold":3,"consecutiveFailures":4,"trips":2,"openUntil":\(later)},
             "authPause":{"schedule":{"base":300,"cap":3600,"factor":2,"jitter":0},"refusals":1,"until":\(later)},
             "hold":{"until":\(later),"count":5,"reason":"HTTP 429"}}
            """
        let memory = try XCTUnwrap(UploaderMemory.restore(from: stored, server: "abc", tuning: UploadTuning(), now: now))
        XCTAssertEqual(memory.retries["location"]?.failures, 2)
        XCTAssertEqual(memory.refusals["health"]?.refusals, 3)
        XCTAssertEqual(memory.breaker.consecutiveFailures, 4)
        XCTAssertEqual(memory.breaker.trips, 2)
        XCTAssertEqual(memory.authPause.refusals, 1)
        XCTAssertEqual(memory.rateLimitWait?.count.failures, 5)
        XCTAssertEqual(memory.rateLimitWait?.reason, "HTTP 429")

        let written = try XCTUnwrap(memory.encoded())
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(written.utf8)) as? [String: Any])
        XCTAssertEqual((object["hold"] as? [String: Any])?["count"] as? Int, 5, written)
        XCTAssertEqual((object["breaker"] as? [String: Any])?["consecutiveFailures"] as? Int, 4, written)
        XCTAssertEqual((object["breaker"] as? [String: Any])?["trips"] as? Int, 2, written)
        XCTAssertEqual(((object["retries"] as? [String: Any])?["location"] as? [String: Any])?["failures"] as? Int, 2, written)
        XCTAssertEqual((object["authPause"] as? [String: Any])?["refusals"] as? Int, 1, written)
        XCTAssertEqual(UploaderMemory.restore(from: written, server: "abc", tuning: UploadTuning(), now: now), memory)
    }
}
