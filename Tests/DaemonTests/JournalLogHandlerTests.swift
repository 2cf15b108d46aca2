import Daemon
import Foundation
import Logging
import XCTest

/// What the daemon writes to the journal: one line per event on stderr, its syslog
/// priority first, a multi-line message folded onto one line.
final class JournalLogHandlerTests: XCTestCase {
    /// The handler's output, read from a pipe put in place of stderr for the call.
    private func written(_ log: (Logger) -> Void) throws -> String {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        let saved = dup(STDERR_FILENO)
        XCTAssertGreaterThanOrEqual(saved, 0)
        dup2(ends[1], STDERR_FILENO)
        var logger = Logger(label: "ariata.test") { JournalLogHandler(label: $0, level: .debug, terminal: false) }
        logger[metadataKey: "stream"] = "health"
        log(logger)
        dup2(saved, STDERR_FILENO)
        close(saved)
        close(ends[1])
        let reader = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        return String(decoding: try XCTUnwrap(try reader.readToEnd()), as: UTF8.self)
    }

    func testAnEventIsOneLineWithItsPriority() throws {
        let text = try written { logger in
            logger.warning("the card is full\nnothing is dropped", metadata: ["free": "0"])
            logger.info("sent 3 records")
        }
        XCTAssertEqual(text, "<4>ariata.test: the card is full ⏎ nothing is dropped free=0 stream=health\n"
            + "<6>ariata.test: sent 3 records stream=health\n")
    }

    func testEmptyLinesOfAMessageAreKept() throws {
        let text = try written { $0.error("a\n\nb\n") }
        XCTAssertEqual(text, "<3>ariata.test: a ⏎  ⏎ b ⏎  stream=health\n")
    }
}
