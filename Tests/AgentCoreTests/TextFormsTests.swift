import AgentCore
import Foundation
import XCTest

/// The text forms the daemon writes without Foundation's formatting code (docs/decisions/0005):
/// each must be exactly what the printf form it replaces wrote.
final class TextFormsTests: XCTestCase {
    /// `RFC3339.string` writes "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" of the UTC time, for
    /// every kind of year: before 1970, under 1000, before year 0, past 9999.
    func testRFC3339IsThePrintfFormOfTheUTCTime() {
        let milliseconds: [Int64] = [
            0, 1, 999, 1_000, -1, -999, -1_000, -1_001,
            1_795_341_900_250, // 2026-11-22T10:05:00.250Z
            951_782_400_000, // 2000-02-29
            -30_610_224_000_000, // 1000-01-01
            -33_000_000_000_000, // year 924
            -62_198_755_200_001, // just before year 0
            -63_000_000_000_000, // year -27
            253_402_300_800_000, // 10000-01-01
            9_000_000_000_000_000,
        ]
        for ms in milliseconds {
            let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
            var t = time_t(seconds)
            var parts = tm()
            gmtime_r(&t, &parts)
            let printf = String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                                Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                                Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(ms - seconds * 1000))
            XCTAssertEqual(RFC3339.string(milliseconds: ms), printf, "\(ms)")
        }
        XCTAssertEqual(RFC3339.string(milliseconds: 1_795_341_900_250), "2026-11-22T10:05:00.250Z")
        XCTAssertEqual(RFC3339.string(milliseconds: -1), "1969-12-31T23:59:59.999Z")
        XCTAssertEqual(RFC3339.milliseconds(from: RFC3339.string(milliseconds: 1_795_341_900_250)), 1_795_341_900_250)
    }

    func testLowercaseHexIsTwoDigitsPerByte() {
        XCTAssertEqual([UInt8]().lowercaseHex, "")
        XCTAssertEqual([0x00, 0x0f, 0x10, 0xa5, 0xff].lowercaseHex, "000f10a5ff")
        let all = (0...255).map { UInt8($0) }
        XCTAssertEqual(all.lowercaseHex, all.map { String(format: "%02x", $0) }.joined())
    }

    func testTrimmingWhitespaceTakesSpacesTabsAndLineEndsFromBothEnds() {
        XCTAssertEqual(" \tRetry-After ".trimmingWhitespace(), "Retry-After")
        XCTAssertEqual(" 120\r\n".trimmingWhitespace(), "120")
        XCTAssertEqual("synchronised\n".trimmingWhitespace(), "synchronised")
        XCTAssertEqual("a b".trimmingWhitespace(), "a b", "inner spaces stay")
        XCTAssertEqual(" \r\n\t".trimmingWhitespace(), "")
        XCTAssertEqual("".trimmingWhitespace(), "")
        let line: Substring = "x-batch-id:  abc \r\n".dropFirst(11)
        XCTAssertEqual(line.trimmingWhitespace(), "abc", "a substring's own bounds")
    }
}
