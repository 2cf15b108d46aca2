import AgentCore
@testable import Capture
import Foundation
import TestRigs
import XCTest

/// Over 100,000 generated lines through each format's parser and the normaliser, via the
/// same line processor the sources use: valid lines are all kept with the right value,
/// lines broken by construction are all counted as malformed, and randomly mutated lines
/// (whose fate is unknown in advance) never crash and are each accounted for once.
final class HealthFuzzTests: XCTestCase {
    static let perKind = 12_000 // × 3 kinds × 3 formats = 108,000 lines

    func testJSONLines() throws { try fuzz(.jsonl, seed: 0x5EED_0001) }
    func testCSV() throws { try fuzz(.csv, seed: 0x5EED_0002) }
    func testKeyValue() throws { try fuzz(.keyvalue, seed: 0x5EED_0003) }

    private func fuzz(_ format: HealthLineFormat, seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let now = Date()
        let counters = HealthSourceCounters(name: "fuzz", kind: .file)
        var processor = HealthLineProcessor(format: format, sourceName: "fuzz", counters: counters, logger: HealthTestBed.logger)
        let header = "timestamp,metric_type,value,unit"
        if format == .csv { processor.process(Substring(header), place: "fuzz:0", now: now, into: &scratch) }
        let csvState = processor.parser.state

        var lines = 0, kept = 0, malformed = 0
        func run(_ line: String) -> (records: [NewRecord], delta: HealthSourceStatus) {
            let before = counters.snapshot()
            var records: [NewRecord] = []
            processor.process(Substring(line), place: "fuzz:\(lines)", now: now, into: &records)
            lines += 1
            var after = counters.snapshot()
            after.linesRead -= before.linesRead
            after.malformedLines -= before.malformedLines
            after.rejectedSamples -= before.rejectedSamples
            after.skippedOld -= before.skippedOld
            return (records, after)
        }

        for _ in 0..<Self.perKind {
            // A valid line: every sample in it kept, with the value the rules give.
            let sample = GeneratedSample.random(&random, now: now)
            let line = sample.render(format, &random)
            let (records, delta) = run(line)
            XCTAssertEqual(delta.malformedLines + delta.rejectedSamples, 0, "valid line refused: \(line)")
            XCTAssertEqual(records.count, 1, line)
            if let record = records.first {
                let object = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
                XCTAssertEqual(object["metric_type"] as? String, sample.metric.rawValue, line)
                if sample.metric == .sleep {
                    // A sleep record's value is its stage's name (the contract's sleep record).
                    XCTAssertEqual(object["value"] as? String, SleepStage(rawValue: Int(sample.expected))?.name, line)
                } else {
                    XCTAssertEqual((object["value"] as? NSNumber)?.doubleValue ?? .nan, sample.expected, accuracy: 1e-9, line)
                }
                kept += 1
            }

            // A line broken by construction: counted, nothing kept.
            let broken = sample.renderBroken(format, &random)
            let (brokenRecords, brokenDelta) = run(broken)
            XCTAssertEqual(brokenDelta.malformedLines, 1, "not counted as malformed: \(broken)")
            XCTAssertTrue(brokenRecords.isEmpty, broken)
            malformed += 1

            // A random mutation of a valid line (or random bytes): any outcome, accounted once.
            let mutated = random.next(upperBound: 10) == 0 ? randomBytes(&random) : mutate(sample.render(format, &random), &random)
            var probe = processor.parser
            let expected = probe.parse(Substring(mutated))
            let (mutatedRecords, mutatedDelta) = run(mutated)
            XCTAssertEqual(mutatedDelta.linesRead, 1)
            switch expected {
            case .samples(let samples):
                XCTAssertEqual(mutatedRecords.count + mutatedDelta.rejectedSamples, samples.count, mutated)
                XCTAssertEqual(mutatedDelta.malformedLines, 0, mutated)
                kept += mutatedRecords.count
            case .malformed:
                XCTAssertEqual(mutatedDelta.malformedLines, 1, mutated)
                XCTAssertTrue(mutatedRecords.isEmpty, mutated)
                malformed += 1
            case .ignored:
                XCTAssertEqual(mutatedDelta.malformedLines + mutatedDelta.rejectedSamples, 0, mutated)
                XCTAssertTrue(mutatedRecords.isEmpty, mutated)
            }
            // A mutated CSV row can look like a header; put the real one back.
            if format == .csv { processor.parser.restore(state: csvState) }
        }
        let status = counters.snapshot()
        XCTAssertEqual(lines, 3 * Self.perKind)
        XCTAssertEqual(status.malformedLines, malformed)
        XCTAssertGreaterThanOrEqual(kept, Self.perKind)
        XCTAssertGreaterThan(malformed, Self.perKind, "the mutations must also break lines")
    }

    private var scratch: [NewRecord] = []

    private func mutate(_ line: String, _ random: inout SplitMix64) -> String {
        var bytes = Array(line.utf8)
        for _ in 0...random.next(upperBound: 3) {
            guard !bytes.isEmpty else { break }
            let at = Int(random.next(upperBound: UInt64(bytes.count)))
            switch random.next(upperBound: 5) {
            case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
            case 1: bytes.removeSubrange(at..<min(bytes.count, at + 1 + Int(random.next(upperBound: 8))))
            case 2: bytes.insert(contentsOf: (0..<random.next(upperBound: 6)).map { _ in UInt8(truncatingIfNeeded: random.next()) }, at: at)
            case 3: bytes.insert(contentsOf: Array("\",={}:;-.e9".utf8).shuffled(using: &random).prefix(3), at: at)
            default: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 12)], at: at)
            }
        }
        return Self.oneLine(bytes)
    }

    private func randomBytes(_ random: inout SplitMix64) -> String {
        Self.oneLine((0..<random.next(upperBound: 120)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
    }

    /// A line as LineBuffer hands it over: no newline, bytes decoded as UTF-8.
    private static func oneLine(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.map { $0 == 0x0A ? 0x20 : $0 }, as: UTF8.self)
    }
}

/// A sample whose normalised value is known exactly, in one of its accepted spellings.
private struct GeneratedSample {
    var metric: HealthMetric
    /// Aliases and the text of the value, unit (nil: none) as written.
    var name: String
    var value: String
    var unit: String?
    var time: String
    var expected: Double

    static func random(_ r: inout SplitMix64, now: Date) -> GeneratedSample {
        let at = now.addingTimeInterval(-Double(r.next(upperBound: 5 * 86_400)) - 1)
        let time = r.next(upperBound: 4) == 0 ? String(Int(at.timeIntervalSince1970)) : RFC3339.string(from: at)
        func pick(_ names: [String]) -> String { names[Int(r.next(upperBound: UInt64(names.count)))] }
        switch r.next(upperBound: 8) {
        case 0:
            let v = 30 + Int(r.next(upperBound: 190))
            return .init(metric: .heartRate, name: pick(["heart_rate", "hr", "bpm", "pulse"]), value: "\(v)", unit: "bpm", time: time, expected: Double(v))
        case 1:
            let v = Int(r.next(upperBound: 50_000))
            return .init(metric: .steps, name: pick(["steps", "step_count"]), value: "\(v)", unit: nil, time: time, expected: Double(v))
        case 2:
            let cm = Int(r.next(upperBound: 5_000_000))
            if r.next(upperBound: 2) == 0 {
                return .init(metric: .distance, name: "distance", value: String(format: "%.2f", Double(cm) / 100), unit: "m", time: time, expected: Double(cm) / 100)
            }
            return .init(metric: .distance, name: "distance", value: String(format: "%.5f", Double(cm) / 100_000), unit: "km", time: time, expected: Double(cm) / 100)
        case 3:
            let tenths = Int(r.next(upperBound: 20_000))
            return .init(metric: .activeEnergy, name: pick(["active_energy", "calories"]), value: String(format: "%.1f", Double(tenths) / 10), unit: "kcal", time: time, expected: Double(tenths) / 10)
        case 4:
            let v = 70 + Int(r.next(upperBound: 31))
            return .init(metric: .oxygenSaturation, name: pick(["spo2", "oxygen_saturation"]), value: "\(v)", unit: "%", time: time, expected: Double(v))
        case 5:
            let tenths = 50 + Int(r.next(upperBound: 2_000))
            return .init(metric: .heartRateVariability, name: pick(["hrv", "heart_rate_variability"]), value: String(format: "%.1f", Double(tenths) / 10), unit: "ms", time: time, expected: Double(tenths) / 10)
        case 6:
            let v = 35 + Int(r.next(upperBound: 60))
            return .init(metric: .restingHeartRate, name: pick(["resting_heart_rate", "rhr"]), value: "\(v)", unit: nil, time: time, expected: Double(v))
        default:
            let stage = SleepStage.allCases[Int(r.next(upperBound: 6))]
            return .init(metric: .sleep, name: "sleep", value: r.next(upperBound: 2) == 0 ? stage.name : "\(stage.rawValue)", unit: nil, time: time, expected: Double(stage.rawValue))
        }
    }

    private var jsonValue: String { NumberText.parse(value) != nil ? value : "\"\(value)\"" }
    private var jsonTime: String { NumberText.parse(time) != nil ? time : "\"\(time)\"" }

    func render(_ format: HealthLineFormat, _ r: inout SplitMix64) -> String {
        let wide = r.next(upperBound: 2) == 0 && unit == nil
        switch format {
        case .jsonl:
            if wide { return #"{"ts":\#(jsonTime),"\#(name)":\#(jsonValue)}"# }
            return #"{"timestamp":\#(jsonTime),"metric_type":"\#(name)","value":\#(jsonValue)\#(unit.map { #","unit":"\#($0)""# } ?? "")}"#
        case .csv:
            return "\(time),\(name),\(value),\(unit ?? "")"
        case .keyvalue:
            if wide { return "ts=\(time) \(name)=\(value)" }
            return "time=\(time);metric=\(name);value=\(value)\(unit.map { ";unit=\($0)" } ?? "")"
        }
    }

    /// The same sample spelled so that no parser can read it.
    func renderBroken(_ format: HealthLineFormat, _ r: inout SplitMix64) -> String {
        switch (format, r.next(upperBound: 3)) {
        case (.jsonl, 0): return String(render(.jsonl, &r).dropLast()) // unclosed object
        case (.jsonl, 1): return #"{"ts":\#(jsonTime),"mood":3}"# // no known metric
        case (.jsonl, _): return "x" + render(.jsonl, &r)
        case (.csv, 0): return render(.csv, &r) + ",1" // a cell too many
        case (.csv, 1): return "\"" + render(.csv, &r) // an open quote
        case (.csv, _): return "\(time),\(name)" // cells missing
        case (.keyvalue, 0): return "reading " + render(.keyvalue, &r) // a word without =
        case (.keyvalue, 1): return "ts=\(time) mood=3" // no known metric
        case (.keyvalue, _): return "ts=\(time) \(name)=\"\(value)" // unclosed quote
        }
    }
}

/// A small seeded generator, so a failure can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func next(upperBound: UInt64) -> UInt64 { next() % upperBound }
}
