import AgentCore
import Foundation
import TestRigs
import XCTest

/// `purge` in the queue: exactly the selection goes, its bytes leave the file, and the
/// event is there for `status`.
final class PurgeTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// 300 location, 40 microphone (30 kB each, a marker inside) and 100 health records
    /// an hour apart from `t0`; the first half of each stream uploaded, ten failed.
    func filledDatabase(_ dir: TemporaryDirectory) throws -> AgentDatabase {
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        func add(_ stream: StreamName, _ count: Int, payload: (Int) -> String) throws {
            let records = try (0..<count).map { i in
                NewRecord(stream: stream, capturedAt: t0.addingTimeInterval(Double(i) * 3_600),
                          payload: Data(payload(i).utf8))
            }
            try database.recordQueue.enqueue(records, anchor: nil)
            let seqs = try database.recordQueue.records(stream: stream).map(\.seq)
            try database.recordQueue.markDelivered(Array(seqs.prefix(count / 2)))
            try database.recordQueue.markFailed(Array(seqs.suffix(10)), error: "E007 refused")
        }
        try add(.location, 300) { "{\"latitude\":52.\($0)}" }
        let audio = String(repeating: "A", count: 30_000)
        try add(.microphone, 40) { "{\"audio\":\"SECRET-CHUNK-\($0)-\(audio)\"}" }
        try add(.health, 100) { "{\"hr\":\($0)}" }
        return database
    }

    func testPurgeDeletesExactlyTheSelectionAndGivesTheSpaceBack() throws {
        let dir = try TemporaryDirectory("purge")
        let database = try filledDatabase(dir)
        let before = t0.addingTimeInterval(25 * 3_600)   // microphone records 0...24

        let selection = PurgeSelection(streams: [.microphone], statuses: RecordStatus.allCases, capturedBefore: before)
        let preview = try database.housekeeping.purgePreview(selection)
        XCTAssertEqual(preview.records, 25)
        XCTAssertEqual(preview.byStream, [.microphone: 25])
        let sizeBefore = database.fileBytes()
        let done = try database.housekeeping.purge(selection, batch: 7)   // several transactions
        XCTAssertEqual(done.records, 25)
        XCTAssertEqual(done.payloadBytes, preview.payloadBytes)
        XCTAssertGreaterThan(done.payloadBytes, 25 * 30_000)

        let left = try database.recordQueue.records(stream: .microphone)
        XCTAssertEqual(left.count, 15)
        XCTAssertTrue(left.allSatisfy { $0.capturedAt >= before })
        XCTAssertEqual(try database.recordQueue.records(stream: .location).count, 300, "other streams untouched")
        XCTAssertEqual(try database.recordQueue.records(stream: .health).count, 100)
        XCTAssertEqual(try database.integrityCheck(), "ok")
        // The space is handed back, and the deleted audio is not left in the file.
        let sizeAfter = database.fileBytes()
        print("measured: purge of \(done.records) chunks (\(done.payloadBytes) bytes): queue file \(sizeBefore) -> \(sizeAfter) bytes")
        XCTAssertLessThan(sizeAfter, sizeBefore - done.payloadBytes * 8 / 10)
        let file = try Data(contentsOf: URL(fileURLWithPath: dir.file("agent.sqlite")))
        XCTAssertNil(file.range(of: Data("SECRET-CHUNK-3-".utf8)), "deleted audio lingers in the file")
        XCTAssertNotNil(file.range(of: Data("SECRET-CHUNK-30-".utf8)), "kept audio is there (the check can fail)")
        // The counts `status` reads follow.
        let mic = try database.recordQueue.counts().filter { $0.stream == .microphone }.reduce(0) { $0 + $1.records }
        XCTAssertEqual(mic, 15)
        let event = try XCTUnwrap(try database.housekeeping.latestPurge())
        XCTAssertTrue(event.message.contains("deleted 25 microphone records captured before"), event.message)
    }

    func testStatusesCombineAndTheRestStays() throws {
        let dir = try TemporaryDirectory("purge")
        let database = try filledDatabase(dir)
        let selection = PurgeSelection(streams: StreamName.allCases, statuses: [.uploaded, .failed])
        let expected = try database.recordQueue.counts().filter { $0.status != .pending }.reduce(0) { $0 + $1.records }
        XCTAssertEqual(try database.housekeeping.purge(selection).records, expected)
        XCTAssertTrue(try database.recordQueue.counts().allSatisfy { $0.status == .pending })
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .pending), 300 - 150 - 10)
        XCTAssertEqual(try database.housekeeping.purge(selection).records, 0, "nothing left to delete")
        XCTAssertEqual(try database.housekeeping.latestPurge()?.message, "deleted 0 all uploaded and failed records (0 bytes)")
    }
}
