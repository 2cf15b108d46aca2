import AgentCore
import Foundation
import Platform
import TestRigs
import XCTest
@testable import Upload

/// `[upload] on_metered` (docs/laptop.md#metered-networks): which streams the scheduled
/// cycles send on a metered connection, as a pure rule; and the uploader keeping to it
/// against the real receiver on virtual time: held audio waits (never dropped), `sync`
/// sends it all the same, and the switch to an unmetered connection sends it at once.
final class MeteredUploadTests: XCTestCase {
    func testTheRuleHoldsAudioOnlyWithSmallEverythingWithNoneAndNothingWithAll() {
        XCTAssertEqual(MeteredUploadRule.deferred(onMetered: .small, metered: true), [.microphone])
        XCTAssertEqual(MeteredUploadRule.deferred(onMetered: .none, metered: true), [.location, .microphone, .health])
        XCTAssertEqual(MeteredUploadRule.deferred(onMetered: .all, metered: true), [])
        for setting in OnMetered.allCases {
            XCTAssertEqual(MeteredUploadRule.deferred(onMetered: setting, metered: false), [], "\(setting) on an unmetered network")
            for stream in StreamName.allCases {
                XCTAssertTrue(MeteredUploadRule.mayGo(stream, onMetered: setting, metered: true, forced: true),
                              "sync sends \(stream) whatever on_metered = \(setting) says")
            }
        }
        XCTAssertFalse(MeteredUploadRule.mayGo(.microphone, onMetered: .small, metered: true, forced: false))
        XCTAssertTrue(MeteredUploadRule.mayGo(.location, onMetered: .small, metered: true, forced: false))
        XCTAssertTrue(MeteredUploadRule.mayGo(.health, onMetered: .small, metered: true, forced: false))
        XCTAssertFalse(MeteredUploadRule.mayGo(.health, onMetered: .none, metered: true, forced: false))
    }

    func testOnAMeteredConnectionAudioWaitsAndGoesTheMomentItIsNoLonger() throws {
        let f = try UploadFixture()
        f.upload.interval = 300
        let scheduler = VirtualScheduler(wallClock: Date())
        let uploader = f.makeUploader(scheduler: scheduler)
        uploader.setMetered(true)
        uploader.start()
        defer { uploader.stop() }
        let fixes = try f.enqueue(.location, count: 3)
        let samples = try f.enqueue(.health, count: 2)
        let audio = try f.enqueue(.microphone, count: 2)

        let cycle = uploader.runScheduledCycle()
        XCTAssertEqual(cycle.streams[.microphone]?.outcome, .deferredOnMeteredNetwork)
        XCTAssertEqual(try f.ids(.location, status: .uploaded), Set(fixes))
        XCTAssertEqual(try f.ids(.health, status: .uploaded), Set(samples))
        XCTAssertEqual(try f.ids(.microphone, status: .pending), Set(audio), "held, not dropped, not failed")
        XCTAssertEqual(try f.receiver.stats().stored(.microphone), 0)
        XCTAssertEqual(uploader.liveness(), .healthy, "waiting for an unmetered network is no fault")

        // Still metered at the next interval: still held.
        scheduler.advance(by: 300)
        XCTAssertEqual(try f.ids(.microphone, status: .pending), Set(audio))

        // Unmetered: a cycle at once, not at the end of the interval.
        uploader.setMetered(false)
        scheduler.advance(by: 0)
        XCTAssertEqual(try f.ids(.microphone, status: .uploaded), Set(audio), "sent the moment the connection is unmetered")
        XCTAssertEqual(try f.receiver.stats().stored(.microphone), 2)
    }

    func testSyncSendsHeldAudioAndNoneHoldsEveryStream() throws {
        let f = try UploadFixture()
        f.upload.onMetered = .none
        let uploader = f.makeUploader(scheduler: VirtualScheduler(wallClock: Date()))
        uploader.setMetered(true)
        let fixes = try f.enqueue(.location, count: 2)
        let audio = try f.enqueue(.microphone, count: 1)

        let scheduled = uploader.runScheduledCycle()
        XCTAssertEqual(scheduled.streams[.location]?.outcome, .deferredOnMeteredNetwork)
        XCTAssertEqual(scheduled.streams[.microphone]?.outcome, .deferredOnMeteredNetwork)
        XCTAssertEqual(try f.receiver.stats().requests, 0, "on_metered = \"none\": nothing goes on its own")

        let report = uploader.syncNow()
        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(try f.ids(.location, status: .uploaded), Set(fixes))
        XCTAssertEqual(try f.ids(.microphone, status: .uploaded), Set(audio), "the person asked: everything goes")
    }
}
