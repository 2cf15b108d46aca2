import Daemon
import Foundation
import XCTest

/// The daemon drops the program pages its start read (README, "Memory"): here on this test
/// process, whose libraries (Foundation, libcurl's) no other process maps (its own program,
/// just linked, may still be dirty page cache, which the kernel cannot drop yet).
final class MemoryFootprintTests: XCTestCase {
    func residentFileKiB() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("RssFile:") })
        return try XCTUnwrap(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }

    func testDroppingTheMappedFilePagesShrinksTheResidentSet() throws {
        let before = try residentFileKiB()
        let advised = MemoryFootprint.dropMappedFilePages()
        let after = try residentFileKiB()
        XCTAssertGreaterThan(advised, 1_000_000, "the program's read-only mappings were advised")
        XCTAssertLessThan(after, before - 512, "file-backed resident memory: \(before) KiB before, \(after) KiB after")
        print("measured: file-backed resident \(before) KiB, \(after) KiB after the drop")
    }
}
