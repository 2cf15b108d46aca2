@testable import Capture
import Foundation
import XCTest

/// The three line formats and the documented field aliases.
final class HealthParserTests: XCTestCase {
    private func samples(_ outcome: LineOutcome, file: StaticString = #filePath, line: UInt = #line) -> [RawHealthSample] {
        guard case .samples(let s) = outcome else {
            XCTFail("expected samples, got \(outcome)", file: file, line: line)
            return []
        }
        return s
    }

    private func isMalformed(_ outcome: LineOutcome) -> Bool {
        if case .malformed = outcome { return true }
        return false
    }

    let t = "2026-11-22T10:05:00.250Z"
    let tDate = Date(timeIntervalSince1970: 1_795_341_900.25)

    func testJSONLongFormAsInTheContract() {
        var p = JSONLinesParser()
        let s = samples(p.parse(#"{"timestamp":"\#(t)","metric_type":"heart_rate","value":72,"unit":"bpm"}"#))
        XCTAssertEqual(s, [RawHealthSample(metric: .heartRate, value: .number(72), unit: "bpm", timestamp: tDate)])
    }

    func testHeartRateAliases() {
        var p = JSONLinesParser()
        for key in ["hr", "heart_rate", "bpm", "pulse", "HeartRate", "heart-rate"] {
            let s = samples(p.parse(#"{"ts":"\#(t)","\#(key)":64}"#))
            XCTAssertEqual(s.first?.metric, .heartRate, key)
            XCTAssertEqual(s.first?.value, .number(64), key)
        }
        for name in ["hr", "HKQuantityTypeIdentifierHeartRate", "heart_rate"] {
            XCTAssertEqual(samples(p.parse(#"{"time":\#(1_795_341_900),"type":"\#(name)","value":"70"}"#)).first?.metric, .heartRate)
        }
    }

    func testWideFormGivesOneSamplePerMetricWithImpliedUnits() {
        var p = JSONLinesParser()
        let s = samples(p.parse(#"{"ts":"\#(t)","hr":72,"steps":10,"distance_km":1.5,"spo2":0.97,"device":"x"}"#))
        XCTAssertEqual(Set(s.map(\.metric)), [.heartRate, .steps, .distance, .oxygenSaturation])
        XCTAssertEqual(s.first { $0.metric == .distance }?.unit, "km")
        XCTAssertTrue(s.allSatisfy { $0.timestamp == tDate })
    }

    func testTimestampForms() {
        var p = JSONLinesParser()
        let forms: [(String, Double)] = [
            (#""2026-11-22T10:05:00Z""#, 1_795_341_900), (#""2026-11-22 11:05:00+01:00""#, 1_795_341_900),
            (#""2026-11-22T05:05:00.5-0500""#, 1_795_341_900.5), ("1795341900", 1_795_341_900),
            ("1795341900123", 1_795_341_900.123),
        ]
        for (form, expected) in forms {
            let s = samples(p.parse(#"{"timestamp":\#(form),"hr":60}"#))
            XCTAssertEqual(s.first?.timestamp?.timeIntervalSince1970 ?? 0, expected, accuracy: 1e-6, form)
        }
        for bad in [#""2026-11-22T10:05:00""#, #""yesterday""#, #""2026-02-30T10:00:00Z""#, "true", "-5"] {
            XCTAssertTrue(isMalformed(p.parse(#"{"timestamp":\#(bad),"hr":60}"#)), bad)
        }
        XCTAssertNil(samples(p.parse(#"{"hr":60}"#)).first?.timestamp, "no time: dated when read")
    }

    func testJSONBadLines() {
        var p = JSONLinesParser()
        for bad in ["{", "[1,2]", "72", #"{"hr":true}"#, #"{"hr":"fast"}"#, #"{"foo":1}"#,
                    #"{"metric_type":"mood","value":3}"#, #"{"metric_type":"heart_rate"}"#, "{\"hr\":7\u{0}2}"] {
            XCTAssertTrue(isMalformed(p.parse(Substring(bad))), bad)
        }
        XCTAssertEqual(p.parse(""), .ignored)
        XCTAssertEqual(p.parse("   "), .ignored)
        XCTAssertEqual(p.parse("# a comment"), .ignored)
    }

    func testSleepLines() {
        var p = JSONLinesParser()
        let s = samples(p.parse(#"{"timestamp":"\#(t)","metric_type":"sleep","value":"deep","duration":1800}"#))
        XCTAssertEqual(s, [RawHealthSample(metric: .sleep, value: .text("deep"), timestamp: tDate, duration: 1800)])
        let wide = samples(p.parse(#"{"timestamp":"\#(t)","sleep_stage":"rem","duration":600}"#))
        XCTAssertEqual(wide, [RawHealthSample(metric: .sleep, value: .text("rem"), timestamp: tDate, duration: 600)])
    }

    func testCSVWithHeaderQuotesAndCRLF() {
        var p = CSVLineParser()
        XCTAssertTrue(isMalformed(p.parse("\(t),72")), "a row before the header")
        XCTAssertEqual(p.parse("timestamp,metric_type,value,unit\r"), .ignored)
        XCTAssertEqual(samples(p.parse("\(t),heart_rate,72,bpm\r")),
                       [RawHealthSample(metric: .heartRate, value: .number(72), unit: "bpm", timestamp: tDate)])
        XCTAssertEqual(samples(p.parse("\"\(t)\",\"distance\",\"1.5\",km")).first?.value, .number(1.5))
        XCTAssertTrue(isMalformed(p.parse("\"\(t)\",\"distance\",\"1,5\",km")), "a quoted comma stays in its cell")
        XCTAssertTrue(isMalformed(p.parse("\(t),heart_rate,72")), "too few cells")
        XCTAssertTrue(isMalformed(p.parse("\(t),heart_rate,\"72,bpm")), "open quote")
        // A new header (a rotated file starting over) replaces the old one, and is state.
        XCTAssertEqual(p.parse("time,hr,steps"), .ignored)
        XCTAssertEqual(p.state, "time,hr,steps")
        XCTAssertEqual(samples(p.parse("\(t),70,")).map(\.metric), [.heartRate], "empty cell: no sample")
        var restored = CSVLineParser()
        restored.restore(state: p.state)
        XCTAssertEqual(samples(restored.parse("\(t),70,5")).map(\.metric), [.heartRate, .steps])
    }

    func testKeyValue() {
        var p = KeyValueLineParser()
        XCTAssertEqual(samples(p.parse("ts=\(t) hr=72 spo2=97")).map(\.metric), [.heartRate, .oxygenSaturation])
        XCTAssertEqual(samples(p.parse("time=\(t);metric=steps;value=12;unit=count")),
                       [RawHealthSample(metric: .steps, value: .number(12), unit: "count", timestamp: tDate)])
        XCTAssertEqual(samples(p.parse(#"ts="\#(t)", sleep="in bed""#)).first?.value, .text("in bed"))
        XCTAssertTrue(isMalformed(p.parse("hr 72")))
        XCTAssertTrue(isMalformed(p.parse("hr=\"72")))
        XCTAssertTrue(isMalformed(p.parse("=72")))
        XCTAssertEqual(p.parse("  "), .ignored)
    }
}
