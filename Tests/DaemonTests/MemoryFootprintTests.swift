@testable import Daemon
import Foundation
import Platform
import TestRigs
import XCTest

/// The daemon drops the program pages its start read (docs/decisions/0005-start-up-page-drop.md): here on this test
/// process, whose libraries (Foundation, libcurl's) no other process maps (its own program,
/// just linked, may still be dirty page cache, which the kernel cannot drop yet).
final class MemoryFootprintTests: XCTestCase {
    func residentFileKiB() throws -> Int {
        try XCTUnwrap(ProcStatus.own()?.residentFile, "RssFile in /proc/self/status").value
    }

    func testDroppingTheMappedFilePagesShrinksTheResidentSet() throws {
        let before = try residentFileKiB()
        let advised = MemoryFootprint.dropMappedFilePages()
        let after = try residentFileKiB()
        XCTAssertGreaterThan(advised, 1_000_000, "the program's read-only mappings were advised")
        XCTAssertLessThan(after, before - 512, "file-backed resident memory: \(before) KiB before, \(after) KiB after")
        print("measured: file-backed resident \(before) KiB, \(after) KiB after the drop")
    }

    /// The drop reaches every mapping, not only those in the first page of
    /// /proc/self/maps (which `String(contentsOfFile:)` stopped at: 37 of 215 lines): each
    /// read-only constants mapping of a file is left marked `MADV_RANDOM` ("rr"), but for
    /// those holding copy-on-write pages, which the drop leaves alone (the next test).
    func testTheDropReachesEveryMapping() throws {
        MemoryFootprint.dropMappedFilePages()
        let file = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        defer { try? file.close() }
        let smaps = String(decoding: try XCTUnwrap(file.readToEnd()), as: UTF8.self)
        var constants = 0
        var relocated = 0
        var current: (perms: Substring, path: Substring)?
        var anonymous = 0
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            let path = fields.count == 6 ? fields[5].drop { $0 == " " } : ""
            if fields.first?.contains("-") == true, path.hasPrefix("/"), !path.hasPrefix("/dev/"), !path.hasSuffix("(deleted)") {
                current = (fields[1], path)
                anonymous = 0
            } else if fields.count >= 5, fields[0].contains("-"), fields[1].count == 4 {
                current = nil   // anonymous, or not a file
            } else if line.hasPrefix("Anonymous:") {
                anonymous = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
            } else if line.hasPrefix("VmFlags:"), let mapping = current, !mapping.perms.contains("w"),
                      !mapping.perms.contains("x") {
                let flags = line.split(separator: " ").dropFirst()
                if anonymous > 0 {
                    relocated += 1
                    XCTAssertFalse(flags.contains("rr"), "advised though it holds copy-on-write pages: \(mapping.path): \(line)")
                } else {
                    constants += 1
                    XCTAssertTrue(flags.contains("rr"), "not reached by the drop: \(mapping.perms) \(mapping.path): \(line)")
                }
            }
        }
        print("measured: \(constants) read-only constants mappings, each reached by the drop; \(relocated) with copy-on-write pages left alone")
        XCTAssertGreaterThan(constants, 20, "the program's and its libraries' constants were read")
    }

    /// A read-only file mapping that holds copy-on-write pages (a position-independent
    /// program's relocated pointers) is left out of the drop: `MADV_PAGEOUT` would write
    /// those pages to swap, on a board whose swap is on its card.
    func testMappingsWithAnonymousPagesAreNotDropped() throws {
        let mappings = try XCTUnwrap(MapsLine.read("self", withAnonymousPages: true))
        XCTAssertTrue(mappings.allSatisfy { $0.anonymousKiB != nil }, "smaps gives every mapping its anonymous memory")
        let relocated = mappings.filter {
            !$0.permissions.contains("w") && $0.path.hasPrefix("/") && ($0.anonymousKiB ?? 0) > 0
        }
        XCTAssertFalse(relocated.isEmpty, "this process has read-only file mappings with relocated pages")
        for mapping in relocated { XCTAssertFalse(MemoryFootprint.isDroppable(mapping), "\(mapping.path) \(mapping.permissions)") }
        let droppable = mappings.filter(MemoryFootprint.isDroppable)
        XCTAssertGreaterThan(droppable.count, 20, "the program's and its libraries' code and constants are still dropped")
        print("measured: \(droppable.count) mappings dropped, \(relocated.count) with \(relocated.reduce(0) { $0 + ($1.anonymousKiB ?? 0) }) KiB of relocated pages left alone")
    }

    /// The daemon drops its pages twice: as it starts, and at its second maintenance round
    /// once the streams run, so that what only the start ran leaves the resident set
    /// (docs/decisions/0005-start-up-page-drop.md). Seen with strace on the real daemon: the program's first mapping
    /// is advised MADV_PAGEOUT once per drop.
    func testTheDaemonDropsItsPagesAgainOnceItsStreamsRun() throws {
        let rig = try DaemonRig(checkInterval: 2)
        let trace = rig.directory.file("madvise.txt")
        try rig.startAgent(launcher: [try ChildProcess.locate("strace"), "-f", "-qq", "-e", "trace=madvise", "-o", trace])
        func drops() -> Int {
            let lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n")
                .filter { $0.contains("MADV_PAGEOUT") }
            // The first call of a drop is the program's first mapping: count its address.
            guard let first = lines.first, let open = first.firstIndex(of: "("), let comma = first.firstIndex(of: ",") else { return 0 }
            let address = first[first.index(after: open)..<comma]
            return lines.filter { $0.contains("(\(address),") }.count
        }
        // Rounds every 2 s, the first 2 s in: the second within about 4 s (strace slows it).
        try waitUntil("the second drop", timeout: 60) { drops() >= 2 }
        // strace is the rig's child and the daemon strace's: the daemon gets the SIGTERM,
        // and strace ends with it.
        let strace = try XCTUnwrap(rig.agent)
        let children = try String(contentsOfFile: "/proc/\(strace.pid)/task/\(strace.pid)/children", encoding: .utf8)
        let daemon = try XCTUnwrap(children.split(separator: " ").first.flatMap { Int32($0) }, "strace has no child")
        kill(daemon, SIGTERM)
        XCTAssertNotNil(strace.wait(timeout: 30), "the daemon did not stop")
        XCTAssertEqual(drops(), 2, "one drop at the start and one at the second round, no more")
    }
}
