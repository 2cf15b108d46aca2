import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// What `status` (text, JSON, Prometheus) says of the storage guard's work, on a small
/// real file system: the disk filled by another program, and the records the cap evicted.
final class StorageStatusTests: XCTestCase, StorageBacklogWriting {
    /// status --json, its text and the metrics say when the disk is below the floor.
    func testStatusSaysTheDiskWasFilledBySomethingElse() throws {
        let fs = try mount()
        let path = fs.file("agent.sqlite")
        let database = try AgentDatabase(path: path)
        let storageGuard = StorageGuard(database: database, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap))
        try writeBacklog(database, audio: 20)
        storageGuard.pass()
        try fs.fillWithAnotherProgram()
        storageGuard.pass()

        var config = AgentConfig()
        config.storage.database = path
        config.storage.minFreeMB = 4
        let status = StatusReader().read(config: config, configFile: fs.file("agent.toml"))
        let json = try status.json()
        try StatusSchema.assertMatches(json)
        XCTAssertNotNil(try StatusReport.decode(json).database.belowFloorSince)
        XCTAssertTrue(PrometheusText.render(status).contains("ariata_agent_storage_below_floor 1"))
        XCTAssertTrue(StatusText(colour: false).render(status).contains("the disk was filled by something else"))

        XCTAssertEqual(unlink(fs.file("filler")), 0)
        storageGuard.pass()
        let cleared = StatusReader().read(config: config, configFile: fs.file("agent.toml"))
        XCTAssertNil(cleared.database.belowFloorSince)
        XCTAssertTrue(PrometheusText.render(cleared).contains("ariata_agent_storage_below_floor 0"))
    }

    /// The cap's evictions, as status --json and the text count them.
    func testTheCapsEvictionsAreCountedByStatus() throws {
        let fs = try mount()
        let path = fs.file("agent.sqlite")
        let database = try AgentDatabase(path: path)
        try writeBacklog(database, audio: 40)
        let audio = try database.recordQueue.records(stream: .microphone).map(\.seq)
        try database.recordQueue.markDelivered(Array(audio.suffix(3)))
        var config = AgentConfig()
        config.storage.database = path
        config.storage.minFreeMB = 4
        config.storage.maxQueueMB = 2
        let evicted = try XCTUnwrap(StorageGuard(database: database, limits: config.storage.limits).pass().evicted[.microphone])
        XCTAssertGreaterThan(evicted, 0)

        // status --json and the text say the same.
        let status = StatusReader().read(config: config, configFile: fs.file("agent.toml"))
        let json = try status.json()
        try StatusSchema.assertMatches(json)
        let decoded = try StatusReport.decode(json)
        XCTAssertEqual(decoded.streams.map(\.evicted), [0, Int64(evicted), 0])
        XCTAssertEqual(decoded.database.maxQueueBytes, 2 * StorageLimits.mebibyte)
        XCTAssertEqual(decoded.database.reserveBytes, StorageLimits.defaultReserveBytes)
        let text = StatusText(colour: false).render(status)
        XCTAssertTrue(text.contains("evicted    location 0, microphone \(evicted), health 0"), text)
        XCTAssertTrue(text.contains("E004 storage guard"), text)
        XCTAssertTrue(text.contains("(location 0, microphone \(evicted), health 0)"), "the warning quotes the counts: \(text)")
    }
}
