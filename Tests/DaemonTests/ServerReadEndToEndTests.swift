import AgentCore
import Foundation
import TestRigs
import XCTest

/// What a person sees on either server generation, end to end: the real daemon captures
/// location from gpsd, audio from ALSA, and every health kind from a file and a serial
/// line, and uploads to the reference receiver; the receiver's report applies each
/// generation's transform rules (docs/upload.md#what-the-servers-read) to what it stored.
/// Every record of a kind some transform reads must be read by both generations.
final class ServerReadEndToEndTests: XCTestCase {
    func testEveryRecordOfAReadKindIsReadByBothServerGenerations() throws {
        let directory = try TemporaryDirectory("ariata-read-e2e")
        let serial = try PtyRig(directory: directory.path)
        let rig = try DaemonRig(extraConfig: """
            [[health.source]]
            kind = "serial"
            path = "\(serial.b)"
            format = "keyvalue"
            name = "serial-watch"
            """)
        try rig.startAgent()

        let start = Date().addingTimeInterval(-900)
        func time(_ i: Int) -> String { RFC3339.string(from: start.addingTimeInterval(Double(i * 10))) }
        // One line for each kind and form the file source reads (long and wide JSON Lines):
        // the read kinds, with a sleep shorter than a minute, and the three archived-only kinds.
        let fileLines = [
            #"{"timestamp":"\#(time(0))","metric_type":"heart_rate","value":72,"unit":"bpm"}"#,
            #"{"timestamp":"\#(time(1))","rhr":55}"#,
            #"{"timestamp":"\#(time(2))","hrv":48.27}"#,
            #"{"timestamp":"\#(time(3))","steps":1200}"#,
            #"{"timestamp":"\#(time(4))","sleep":"deep","duration":1800}"#,
            #"{"timestamp":"\#(time(5))","sleep":"rem","duration":20}"#,
            #"{"timestamp":"\#(time(6))","metric_type":"sleep","value":"awake","sleep_duration":300}"#,
            #"{"timestamp":"\#(time(7))","metric_type":"workout","workout_type":"running","duration":1830,"distance_km":5.01,"kcal":312.4,"hr":149}"#,
            #"{"timestamp":"\#(time(8))","workout_type":"yoga"}"#,
            #"{"timestamp":"\#(time(9))","kcal":120}"#,
            #"{"timestamp":"\#(time(10))","distance_m":800}"#,
            #"{"timestamp":"\#(time(11))","spo2":0.97}"#,
        ]
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: rig.healthPath))
        try handle.write(contentsOf: Data(fileLines.map { $0 + "\n" }.joined().utf8))
        try handle.close()
        // The same over a serial line, key=value.
        let serialLines = [
            "ts=\(time(20)) hr=70",
            "ts=\(time(21)) resting_hr=52",
            "ts=\(time(22)) sdnn=61.5",
            "ts=\(time(23)) steps=33",
            "ts=\(time(24)) sleep=core duration=900",
            "ts=\(time(25)) workout_type=\"strength training\" duration_min=45 active_energy_kj=1000",
        ]
        // After the source has opened the line (it reads from when it opens).
        try waitUntil("the serial source open", timeout: 30) { rig.agentLog.contains("health source serial-watch: reading") }
        Thread.sleep(forTimeInterval: 1)
        try serial.send(serialLines.map { $0 + "\n" }.joined())

        let health = fileLines.count + serialLines.count
        try waitUntil("every health sample, two audio chunks and two fixes at the receiver", timeout: 90) {
            let stats = try rig.receiver.stats()
            return stats.stored(.health) >= health && stats.stored(.microphone) >= 2 && stats.stored(.location) >= 2
        }
        let stats = try rig.receiver.stats()
        XCTAssertEqual(stats.stored(.health), health, "each line one record, none refused: \(rig.agentLog)")
        XCTAssertEqual(Set(stats.statuses.keys), ["200"], "nothing refused: \(stats.statuses)")

        let report = try rig.receiver.readable()
        for generation in ["ariata", "virtues"] {
            let streams = try XCTUnwrap(report[generation], "\(report)")
            for stream in ["location", "microphone", "healthkit"] {
                let counts = try XCTUnwrap(streams[stream], "\(generation) \(stream)")
                XCTAssertGreaterThan(counts.received, 0, "\(generation) \(stream)")
                XCTAssertEqual(counts.read, counts.received, "\(generation) reads every \(stream) record")
            }
            // The three archived-only kinds (energy, distance, SpO2) are out of the counts.
            XCTAssertEqual(streams["healthkit"]?.received, health - 3, generation)
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }
}
