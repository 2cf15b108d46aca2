import AgentCore
import Foundation
import Logging
import TestRigs
import XCTest

/// Each stream and each component logs under a label of its own, all of them from
/// `LoggerLabel`: a journal line's label says which part wrote it (the supervisor is not
/// the health stream).
final class LoggerLabelTests: XCTestCase {
    func testEveryLabelIsItsOwn() {
        let labels = LoggerLabel.allCases.map(\.rawValue)
        XCTAssertEqual(Set(labels).count, labels.count, "no two components share a label: \(labels)")
        for label in labels { XCTAssertTrue(label.hasPrefix("ariata."), label) }
        let streams = StreamName.allCases.map { LoggerLabel.stream($0) }
        XCTAssertEqual(streams.map(\.rawValue), StreamName.allCases.map { "ariata.\($0.rawValue)" })
        XCTAssertFalse(streams.contains(.supervisor), "the supervisor does not log as a stream")
    }

    /// The shipped code names its loggers only through `LoggerLabel`: a label written as a
    /// string elsewhere could repeat another component's.
    func testTheSourcesNameLoggersOnlyThroughTheRegistry() throws {
        let sources = Repository.path("Sources")
        let files = try XCTUnwrap(FileManager.default.enumerator(atPath: sources)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasSuffix("LoggerLabel.swift") }
        XCTAssertGreaterThan(files.count, 100, "the sources were found")
        var offenders: [String] = []
        for file in files {
            let text = try String(contentsOfFile: "\(sources)/\(file)", encoding: .utf8)
            if text.contains("Logger(label:") { offenders.append(file) }
        }
        XCTAssertEqual(offenders, [], "use Logger(.label) with a case of LoggerLabel")
    }
}
