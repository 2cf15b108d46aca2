import AgentCore
import Foundation
import XCTest

/// Record ids are version 7 UUIDs: ordered by time (so the queue's unique index grows at its
/// end, docs/queue.md), unique from their random part whatever the clock says.
final class RecordIDTests: XCTestCase {
    func testAVersionSevenIdCarriesItsMillisecondsAndTheRightBits() {
        let time = Date(timeIntervalSince1970: 1_800_000_000.123)
        let id = RecordID.make(at: time)
        let text = id.uuidString.lowercased()
        // 1_800_000_000_123 ms = 0x1a3185c507b
        XCTAssertTrue(text.hasPrefix("01a3185c-507b-7"), text)
        let variant = try? XCTUnwrap(text.split(separator: "-")[3].first)
        XCTAssertTrue(["8", "9", "a", "b"].contains(variant.map(String.init) ?? "?"), text)
        XCTAssertNotNil(UUID(uuidString: text))
    }

    func testIdsFollowTimeAndNeverRepeatEvenOnAStoppedClock() {
        var previous = RecordID.make(at: Date(timeIntervalSince1970: 1_800_000_000))
        for step in 1...1_000 {
            let next = RecordID.make(at: Date(timeIntervalSince1970: 1_800_000_000 + Double(step) * 0.01))
            XCTAssertLessThan(previous.uuidString, next.uuidString, "step \(step)")
            previous = next
        }
        // A clock that stands still (or reads 1970) still gives distinct ids.
        let stopped = Date(timeIntervalSince1970: 0)
        let ids = Set((0..<100_000).map { _ in RecordID.make(at: stopped) })
        XCTAssertEqual(ids.count, 100_000)
    }
}
