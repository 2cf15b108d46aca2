import AgentCore
import Capture
import Foundation
import Platform
import Synchronization
import XCTest

/// The gate's decisions on a clock the test moves: a muted place from the latest fix and
/// how long a fix inside holds without a newer one (`muted_place_fix_age`), the quiet hours
/// over it, the daemon's holds under both, and each change reported once with its span.
final class MicrophoneGateTests: XCTestCase {
    let zone = PrivacyZone(latitude: 52.52, longitude: 13.405, radius: 100, name: "office", action: .skip, microphone: .mute)
    let unmuted = PrivacyZone(latitude: 48.85, longitude: 2.35, radius: 100)

    final class Changes: Sendable {
        private let list = Mutex<[(old: MicrophoneGate.State, new: MicrophoneGate.State)]>([])
        func add(_ old: MicrophoneGate.State, _ new: MicrophoneGate.State) { list.withLock { $0.append((old, new)) } }
        var all: [(old: MicrophoneGate.State, new: MicrophoneGate.State)] { list.withLock { $0 } }
    }

    func gate(quiet: [QuietHours] = [], fixAge: Int = 600, clock: ManualClock) throws -> (MicrophoneGate, Changes) {
        var microphone = MicrophoneConfig()
        microphone.quiet = quiet
        microphone.mutedPlaceFixAge = fixAge
        let gate = MicrophoneGate(microphone: microphone, zones: [zone, unmuted],
                                  timeZone: try XCTUnwrap(TimeZone(identifier: "UTC")), clock: clock)
        let changes = Changes()
        gate.addObserver { changes.add($0, $1) }
        gate.evaluate()
        return (gate, changes)
    }

    func testAFixInsideMutesUntilOneOutsideOrUntilItIsTooOld() throws {
        let clock = ManualClock()
        let (gate, changes) = try gate(clock: clock)
        XCTAssertNil(gate.current?.closedBy)
        gate.observe(latitude: 48.85, longitude: 2.35)
        XCTAssertNil(gate.current?.closedBy, "a zone without microphone = \"mute\" does not mute")

        clock.advance(by: 10)
        let entered = clock.now()
        gate.observe(latitude: 52.5201, longitude: 13.4051)
        XCTAssertEqual(gate.current?.closedBy, .place)
        XCTAssertEqual(gate.current?.since, entered)
        XCTAssertEqual(gate.closedFrom(entered.addingTimeInterval(-2), to: entered.addingTimeInterval(1)), entered,
                       "the capture thread cuts at the moment the fix came")

        // Fixes inside refresh it; one outside ends it at once.
        clock.advance(by: 300)
        gate.observe(latitude: 52.5202, longitude: 13.4052)
        XCTAssertEqual(gate.nextChange(after: clock.now()), clock.now().addingTimeInterval(600))
        clock.advance(by: 60)
        let left = clock.now()
        gate.observe(latitude: 52.53, longitude: 13.405)
        XCTAssertNil(gate.current?.closedBy)
        XCTAssertEqual(changes.all.count, 2)
        XCTAssertEqual(changes.all.last?.old.since, entered, "the span reported from the fix that entered…")
        XCTAssertEqual(changes.all.last?.new.since, left, "…to the fix that left")
        // Audio read after the fix that left but captured before it (what the device still
        // held) is still the muted span's.
        XCTAssertEqual(gate.closedFrom(left.addingTimeInterval(-3), to: left.addingTimeInterval(1)), left.addingTimeInterval(-3))
        XCTAssertEqual(gate.openFrom(left.addingTimeInterval(-3), to: left.addingTimeInterval(1)), left)
        XCTAssertNil(gate.closedFrom(left, to: left.addingTimeInterval(1)))

        // No fix after one inside (the location stream paused, indoors): muted for
        // muted_place_fix_age, then not.
        gate.observe(latitude: 52.52, longitude: 13.405)
        let last = clock.now()
        XCTAssertEqual(gate.nextChange(after: last), last.addingTimeInterval(600))
        clock.advance(by: 599.9)
        XCTAssertEqual(gate.evaluate().closedBy, .place)
        clock.advance(by: 0.2)
        let open = gate.evaluate()
        XCTAssertNil(open.closedBy, "the last fix inside is too old to keep the microphone muted")
        XCTAssertEqual(open.since, last.addingTimeInterval(600), "ended when the fix ran out, not when asked")
        XCTAssertNil(gate.closedFrom(clock.now(), to: clock.now().addingTimeInterval(2)))
    }

    func testTheQuietHoursComeFirstAndTheHoldsStayUnderneath() throws {
        // 1_800_000_000 is 2027-01-15 08:00:00 UTC.
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000 - 30))
        let quiet = [QuietHours(from: try XCTUnwrap(TimeOfDay("08:00")), to: try XCTUnwrap(TimeOfDay("09:00")))]
        let (gate, changes) = try gate(quiet: quiet, clock: clock)
        gate.hold(.paused)
        XCTAssertEqual(gate.current?.closedBy, .paused)
        let boundary = Date(timeIntervalSince1970: 1_800_000_000)
        XCTAssertEqual(gate.nextChange(after: clock.now()), boundary)
        XCTAssertEqual(gate.closedFrom(boundary.addingTimeInterval(-1), to: boundary.addingTimeInterval(1)), boundary)
        XCTAssertEqual(gate.openFrom(boundary, to: boundary.addingTimeInterval(7_200)), boundary.addingTimeInterval(3_600))
        clock.advance(by: 30)
        XCTAssertEqual(gate.evaluate().closedBy, .schedule, "the person's rule says why, over a pause")
        gate.observe(latitude: 52.52, longitude: 13.405)
        XCTAssertEqual(gate.current?.closedBy, .schedule)
        clock.advance(by: 3_500)
        gate.observe(latitude: 52.5201, longitude: 13.405)
        clock.advance(by: 100)
        XCTAssertEqual(gate.evaluate().closedBy, .place, "still at the muted place when the quiet hours end")
        gate.hold(nil)
        gate.observe(latitude: 52.6, longitude: 13.405)
        XCTAssertNil(gate.current?.closedBy)
        XCTAssertEqual(changes.all.map { $0.new.closedBy }, [.paused, .schedule, .place, nil])
        // Each span begins where the one before ended.
        for (earlier, later) in zip(changes.all, changes.all.dropFirst()) {
            XCTAssertEqual(later.old.since, earlier.new.since)
        }
        XCTAssertEqual(changes.all[1].new.since, boundary)
        XCTAssertEqual(changes.all[2].new.since, boundary.addingTimeInterval(3_600))
    }

    func testAMutedSpanRecordIsTheBoxAppsMarker() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let record = try MutedSpanRecord.make(from: start, to: start.addingTimeInterval(1_800), mutedBy: .place)
        let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
        XCTAssertEqual(record.stream, .microphone)
        XCTAssertNil(record.attachment, "no audio")
        XCTAssertEqual(fields["muted_by"] as? String, "place")
        XCTAssertEqual(fields["is_silent"] as? Bool, true)
        XCTAssertEqual(fields["duration_seconds"] as? Double, 1_800)
        XCTAssertEqual(fields["timestamp_start"] as? String, "2027-01-15T08:00:00.000Z")
        XCTAssertEqual(fields["timestamp_end"] as? String, "2027-01-15T08:30:00.000Z")
        XCTAssertNil(fields["average_db_level"])
        XCTAssertFalse(String(decoding: record.payload, as: UTF8.self).contains("52."), "never the place itself")
    }
}
