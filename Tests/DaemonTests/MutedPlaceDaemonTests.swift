import AgentCore
import Capture
import Foundation
import Reports
import TestRigs
import XCTest

/// A muted place against the real daemon: a real gpsd fed the rig's drive through a zone
/// with `microphone = "mute"`, and the microphone fed speech at real-time pace. The
/// microphone stops when a fix enters the zone and starts again when one leaves it; the
/// queue and the audio journal hold no audio of the time inside; `status` says why.
final class MutedPlaceDaemonTests: XCTestCase {
    func metres(_ a: (Double, Double), _ b: (Double, Double)) -> Double {
        let r = 6_371_008.8, rad = Double.pi / 180
        let x = (b.1 - a.1) * rad * cos((a.0 + b.0) / 2 * rad)
        let y = (b.0 - a.0) * rad
        return r * (x * x + y * y).squareRoot()
    }

    struct Chunk {
        var start: Date
        var end: Date
    }

    func testTheMicrophoneIsMutedWhileTheTrackIsInsideTheZone() throws {
        // Two epochs a second from when the rig is made (as PrivacyZoneDaemonTests).
        let fed = Date()
        let period = 0.5
        let drive = NMEADrive.synthetic(epochs: 600, start: fed)
        let centre = (drive[30].latitude, drive[30].longitude), radius = 100.0
        // The drive turns 3 degrees an epoch: its first loop only.
        let inside = drive.indices.prefix(100).filter { metres((drive[$0].latitude, drive[$0].longitude), centre) <= radius }
        let firstInside = try XCTUnwrap(inside.first), lastInside = try XCTUnwrap(inside.last)
        XCTAssertEqual(inside.count, lastInside - firstInside + 1, "the track crosses the zone once")
        let rig = try DaemonRig(chunkSeconds: 5, overlapSeconds: 1, checkInterval: 1, extraConfig: """
            [[location.exclude]]
            name = "office"
            latitude = \(centre.0)
            longitude = \(centre.1)
            radius = \(radius)
            microphone = "mute"
            """, locationInterval: 1, drivePeriod: period)
        try rig.startAgent()
        let database = try rig.openDatabase()
        let journal = AudioJournal.directory(forDatabase: rig.databasePath)
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)

        try waitUntil("the microphone muted in the zone", timeout: 60) { rig.agentLog.contains("microphone muted: in a muted place") }
        Thread.sleep(forTimeInterval: 1.5)
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: journal)) ?? []).filter { !$0.hasPrefix(".") }
        XCTAssertEqual(files, [], "inside the zone no chunk is in progress in the audio journal")
        let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
        let microphone = try XCTUnwrap(report.streams.first { $0.name == "microphone" })
        XCTAssertEqual(microphone.mutedBy, "place")
        XCTAssertEqual(microphone.liveness, "paused")
        XCTAssertTrue(try cli.run(["status"]).stdout.contains("microphone: muted in a muted place since"))
        XCTAssertFalse(rig.agentLog.contains(String(format: "%.4f", centre.0)), "the zone's position reached the log")

        try waitUntil("capture again after the zone", timeout: 60) {
            let after = try chunks(database)
            return rig.agentLog.contains("no longer in a muted place") && after.contains { $0.start > fed.addingTimeInterval(Double(lastInside + 1) * period) }
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)

        // The chunks leave one gap, and it is the time inside the zone: from the fix that
        // entered to the fix that left, `period` a epoch. The feed starts once gpsd is up,
        // a moment after `fed`, and gpsd and the rounds add a little: the gap lies a few
        // seconds after the plan, never before it, and lasts as long as the crossing.
        let written = try chunks(database)
        var gaps: [(from: Date, to: Date)] = []
        for (a, b) in zip(written, written.dropFirst()) where b.start.timeIntervalSince(a.end) > 1 {
            gaps.append((a.end, b.start))
        }
        XCTAssertEqual(gaps.count, 1, "one gap: \(gaps)")
        let gap = try XCTUnwrap(gaps.first)
        let entered = fed.addingTimeInterval(Double(firstInside) * period)
        let crossing = Double(lastInside + 1 - firstInside) * period
        print("measured: muted \(gap.from.timeIntervalSince(entered)) s after the planned entry, for \(gap.to.timeIntervalSince(gap.from)) s of a \(crossing) s crossing")
        XCTAssertTrue((-0.5...5).contains(gap.from.timeIntervalSince(entered)), "muted when a fix entered the zone")
        XCTAssertEqual(gap.to.timeIntervalSince(gap.from), crossing, accuracy: 2, "muted for the crossing")
        XCTAssertEqual(try database.recordQueue.records(stream: .microphone).filter {
            String(decoding: $0.payload, as: UTF8.self).contains("muted_by")
        }.count, 0, "not paired with a box: no muted-span record")
    }

    func chunks(_ database: AgentDatabase) throws -> [Chunk] {
        try database.recordQueue.records(stream: .microphone).compactMap { record -> Chunk? in
            guard let fields = try JSONSerialization.jsonObject(with: record.payload) as? [String: Any],
                  let start = RFC3339.date(from: fields["timestamp_start"] as? String ?? ""),
                  let end = RFC3339.date(from: fields["timestamp_end"] as? String ?? "") else { return nil }
            return Chunk(start: start, end: end)
        }.sorted { $0.start < $1.start }
    }
}
