@testable import AgentCore
import XCTest

final class RecordJSONTests: XCTestCase {
    private func text(_ object: [String: any Sendable]) throws -> String {
        String(decoding: try RecordJSON.data(object), as: UTF8.self)
    }

    func testKeysAreSortedByTheirBytesAndObjectsNest() throws {
        let written = try text(["b": 1, "a_b": true, "ab": false, "A": "x", "m": ["z": 1.5, "y": "/path"] as [String: any Sendable]])
        XCTAssertEqual(written, #"{"A":"x","a_b":true,"ab":false,"b":1,"m":{"y":"/path","z":1.5}}"#)
    }

    func testStringsEscapeQuotesBackslashesAndControlsOnly() throws {
        let written = try text(["s": "Mia's \"ring\" \\ ünï 💓\t\n\r\u{01}\u{1f}/"])
        XCTAssertEqual(written, #"{"s":"Mia's \"ring\" \\ ünï 💓\t\n\r\u0001\u001f/"}"#)
        let back = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(written.utf8)) as? [String: Any])
        XCTAssertEqual(back["s"] as? String, "Mia's \"ring\" \\ ünï 💓\t\n\r\u{01}\u{1f}/")
    }

    func testNumbersReadBackToTheSameValue() throws {
        let values: [Double] = [0, -0.0, 1, -12, 0.1, 52.520008, -13.404954, 1e-7, 123_456_789.125, 1e15, 1e300, .leastNonzeroMagnitude]
        for value in values {
            let written = try text(["v": value])
            let back = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(written.utf8)) as? [String: Any])
            XCTAssertEqual((back["v"] as? NSNumber)?.doubleValue, value, written)
        }
        XCTAssertEqual(try text(["v": 60.0]), #"{"v":60}"#)
        XCTAssertEqual(try text(["v": Int32(-5), "w": Int64(1) << 40]), #"{"v":-5,"w":1099511627776}"#)
    }

    func testWhatJSONCannotHoldIsAnErrorThatNamesTheKey() {
        XCTAssertThrowsError(try RecordJSON.data(["speed": Double.nan])) { error in
            XCTAssertTrue("\(error)".contains("speed"), "\(error)")
        }
        XCTAssertThrowsError(try RecordJSON.data(["when": Date()])) { error in
            XCTAssertTrue("\(error)".contains("when"), "\(error)")
        }
    }
}
