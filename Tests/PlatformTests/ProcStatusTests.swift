import Foundation
import Platform
import TestRigs
import XCTest

/// The one reader of /proc/PID/status (Sources/Platform/Proc/ProcStatus.swift): sizes are kB,
/// counts are counts, and a line of the wrong kind is not taken for the other.
final class ProcStatusTests: XCTestCase {
    func testSizesAreKiBAndCountsAreCounts() {
        let status = ProcStatus(parsing: """
            Name:\tariata-location
            VmPeak:\t    3060 kB
            VmHWM:\t    1736 kB
            VmRSS:\t    1700 kB
            RssAnon:\t     112 kB
            RssFile:\t    1588 kB
            Threads:\t1
            voluntary_ctxt_switches:\t42
            nonvoluntary_ctxt_switches:\t7

            """)
        XCTAssertEqual(status.name, "ariata-location")
        XCTAssertEqual(status.highWaterMark, KiB(1736))
        XCTAssertEqual(status.residentSet, KiB(1700))
        XCTAssertEqual(status.residentSet?.bytes, 1700 * 1024)
        XCTAssertEqual(status.residentAnonymous, KiB(112))
        XCTAssertEqual(status.residentFile, KiB(1588))
        XCTAssertEqual(status.voluntaryContextSwitches, 42)
        XCTAssertEqual(status.involuntaryContextSwitches, 7)
    }

    func testALineOfTheOtherKindIsNotRead() {
        // A size without its unit, a count with one: neither is what the kernel writes.
        let status = ProcStatus(parsing: "VmRSS:\t1700\nvoluntary_ctxt_switches:\t42 kB\n")
        XCTAssertNil(status.residentSet)
        XCTAssertNil(status.voluntaryContextSwitches)
        XCTAssertNil(status.highWaterMark, "missing")
    }

    func testThisProcessAndThisThread() throws {
        let own = try XCTUnwrap(ProcStatus.own())
        let resident = try XCTUnwrap(own.residentSet)
        XCTAssertGreaterThan(resident, KiB(1024), "a test process holds more than 1 MiB")
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(own.highWaterMark), resident)
        XCTAssertEqual(own.residentAnonymous.map { $0.value + (own.residentFile?.value ?? 0) } ?? 0, resident.value,
                       accuracy: resident.value / 10, "RssAnon + RssFile (+ RssShmem) make VmRSS")
        let thread = try XCTUnwrap(ProcStatus(path: "/proc/thread-self/status"))
        let comm = try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
        XCTAssertEqual(thread.name, comm)
        XCTAssertNotNil(thread.voluntaryContextSwitches)
        XCTAssertNil(ProcStatus(pid: -1), "a process that is not there")
    }
}
