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

    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// A file of `pages` pages of "a", open for reading.
    func fileOf(pages: Int, in directory: TemporaryDirectory) throws -> Int32 {
        let path = directory.file("mapped")
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x61, count: pageSize * pages)))
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ENOENT) }
        return descriptor
    }

    /// A private, writable mapping of the file's first `pages` pages (writes make copies).
    func mapPrivately(_ descriptor: Int32, pages: Int) throws -> UnsafeMutablePointer<UInt8> {
        let raw = mmap(nil, pageSize * pages, PROT_READ | PROT_WRITE, MAP_PRIVATE, descriptor, 0)
        guard let raw, raw != MAP_FAILED else { throw XCTSkip("mmap failed") }
        return raw.assumingMemoryBound(to: UInt8.self)
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
    /// private mapping of a file, code included, is left marked `MADV_RANDOM` ("rr").
    func testTheDropReachesEveryMapping() throws {
        MemoryFootprint.dropMappedFilePages()
        let mappings = try XCTUnwrap(MapsLine.read("self", withAnonymousPages: true))
        let file = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        defer { try? file.close() }
        let smaps = String(decoding: try XCTUnwrap(file.readToEnd()), as: UTF8.self)
        let flags = smaps.split(separator: "\n").filter { $0.hasPrefix("VmFlags:") }
        XCTAssertEqual(flags.count, mappings.count, "one VmFlags line a mapping")
        var reached = 0
        for (mapping, line) in zip(mappings, flags) where MemoryFootprint.isFileMapping(mapping) {
            XCTAssertTrue(line.split(separator: " ").contains("rr"), "not reached by the drop: \(mapping.permissions) \(mapping.path): \(line)")
            reached += 1
        }
        print("measured: \(reached) file mappings, each reached by the drop")
        XCTAssertGreaterThan(reached, 40, "the program's and its libraries' code and constants were read")
    }

    /// A private file mapping that holds copy-on-write copies keeps them through the drop:
    /// read-only (a position-independent program's relocated pointers, made read-only after
    /// the loader wrote them) and writable alike. Only the pages still the file's leave.
    func testCopyOnWriteCopiesSurviveTheDrop() throws {
        let directory = try TemporaryDirectory("ariata-memory-footprint")
        let pages = 64
        let descriptor = try fileOf(pages: pages, in: directory)
        defer { close(descriptor) }
        func map() throws -> UnsafeMutablePointer<UInt8> {
            let bytes = try mapPrivately(descriptor, pages: pages)
            for page in 0 ..< pages { XCTAssertEqual(bytes[page * pageSize], 0x61) }   // every page the file's
            for page in stride(from: 0, to: pages, by: 4) { bytes[page * pageSize] = 0x7a }   // a copy of every fourth
            return bytes
        }
        let relocated = try map(), writable = try map()
        defer { munmap(relocated, pageSize * pages); munmap(writable, pageSize * pages) }
        XCTAssertEqual(mprotect(relocated, pageSize * pages, PROT_READ), 0)

        MemoryFootprint.dropMappedFilePages()

        let mappings = try XCTUnwrap(MapsLine.read("self", withAnonymousPages: true))
        for (bytes, name) in [(relocated, "read-only"), (writable, "writable")] {
            let mapping = try XCTUnwrap(mappings.first { $0.start == UInt(bitPattern: bytes) }, name)
            XCTAssertEqual(mapping.anonymousKiB, pages / 4 * pageSize / 1024, "\(name): the copies are still resident")
            for page in 0 ..< pages {
                XCTAssertEqual(bytes[page * pageSize], page % 4 == 0 ? 0x7a : 0x61, "\(name) page \(page) after the drop")
            }
        }
    }

    /// The drop tells a mapping's pages apart through /proc/self/pagemap, a few pages of
    /// entries at a time: a page read is a run of the file's own, a page written is a copy
    /// and in no run, and a mapping only read holds no copies. More pages than one read of
    /// entries holds, so that the reads' seams are crossed.
    func testThePageMapTellsTheFilesPagesFromCopies() throws {
        let directory = try TemporaryDirectory("ariata-page-map")
        let pages = 3_000
        let descriptor = try fileOf(pages: pages, in: directory)
        defer { close(descriptor) }
        let bytes = try mapPrivately(descriptor, pages: pages)
        defer { munmap(bytes, pageSize * pages) }
        let start = UInt(bitPattern: bytes), end = start + UInt(pageSize * pages)
        let read = [0, 1, 1_023, 1_024, 1_025, 2_999], written = [1_500, 2_048]
        for page in read { XCTAssertEqual(bytes[page * pageSize], 0x61) }
        let map = try XCTUnwrap(PageMap())

        let onlyRead = map.filePageRuns(from: start, to: end)
        XCTAssertFalse(onlyRead.holdsCopies, "nothing was written")
        func inRuns(_ page: Int, _ runs: [PageMap.Run]) -> Bool {
            let number = start / UInt(pageSize) + UInt(page)
            return runs.contains { $0.start <= number && number < $0.end }
        }
        for page in read { XCTAssertTrue(inRuns(page, onlyRead.runs), "page \(page), read, is the file's") }
        XCTAssertTrue(zip(onlyRead.runs, onlyRead.runs.dropFirst()).allSatisfy { $0.end < $1.start }, "runs in order, apart")

        for page in written { bytes[page * pageSize] = 0x7a }
        // A copy made in a large folio may unmap its neighbours (Linux 6.18): read again.
        for page in read { XCTAssertEqual(bytes[page * pageSize], 0x61) }
        let copied = map.filePageRuns(from: start, to: end)
        XCTAssertTrue(copied.holdsCopies, "two pages were written")
        for page in written { XCTAssertFalse(inRuns(page, copied.runs), "page \(page), written, is a copy") }
        for page in read { XCTAssertTrue(inRuns(page, copied.runs), "page \(page) is still the file's") }
    }

    /// The daemon drops its pages before it parses its arguments; as each stage of its
    /// start ends (the queue opened, the server's switches asked, the uploader made, the
    /// streams set up, the rest set up before the first upload cycle), so that its resident
    /// set never holds all of the start at once; at every maintenance round as its streams
    /// run, so that an upload cycle's pages do not stay; and before each connection, so that
    /// a TLS handshake runs beside the streams' pages only
    /// (docs/decisions/0005-start-up-page-drop.md). Seen with strace on the real daemon: the
    /// program's first mapping (read-only, no copies) is advised MADV_DONTNEED once per drop.
    func testTheDaemonDropsItsPagesAgainOnceItsStreamsRun() throws {
        let rig = try DaemonRig(checkInterval: 2)
        let trace = rig.directory.file("madvise.txt")
        try rig.startAgent(launcher: [try ChildProcess.locate("strace"), "-f", "-qq", "-e", "trace=madvise,fadvise64", "-o", trace])
        /// Each drop's calls, in order: its MADV_DONTNEED calls and its POSIX_FADV_DONTNEED ones.
        func drops() -> [(dontneed: Int, handedBack: Int)] {
            let lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n")
            // The first call of a drop is the program's first mapping: a drop starts at its address.
            guard let first = lines.first(where: { $0.contains("MADV_DONTNEED") }), let open = first.firstIndex(of: "("),
                  let comma = first.firstIndex(of: ",") else { return [] }
            let address = first[first.index(after: open)..<comma]
            var drops: [(dontneed: Int, handedBack: Int)] = []
            for line in lines {
                if line.contains("madvise(\(address),") && line.contains("MADV_DONTNEED") { drops.append((0, 0)) }
                guard !drops.isEmpty else { continue }
                if line.contains("MADV_DONTNEED") { drops[drops.count - 1].dontneed += 1 }
                if line.contains("POSIX_FADV_DONTNEED") { drops[drops.count - 1].handedBack += 1 }
            }
            return drops
        }
        // Rounds every 2 s, the first 2 s in (strace slows it). Besides the start's stages and
        // the rounds, a drop goes before each connection (the switches' ask, each upload cycle).
        try waitUntil("the twelfth drop", timeout: 60) { drops().count >= 12 }
        // strace is the rig's child and the daemon strace's: the daemon gets the SIGTERM,
        // and strace ends with it.
        let strace = try XCTUnwrap(rig.agent)
        let children = try String(contentsOfFile: "/proc/\(strace.pid)/task/\(strace.pid)/children", encoding: .utf8)
        let daemon = try XCTUnwrap(children.split(separator: " ").first.flatMap { Int32($0) }, "strace has no child")
        kill(daemon, SIGTERM)
        XCTAssertNotNil(strace.wait(timeout: 30), "the daemon did not stop")
        let seen = drops()
        XCTAssertGreaterThanOrEqual(seen.count, 12, "one before the arguments, five in the start, one at each round, one before each connection")
        for (index, drop) in seen.enumerated() { XCTAssertGreaterThan(drop.dontneed, 0, "drop \(index + 1) unmaps") }
        // The one before the arguments, the start's five and the first two rounds hand the
        // pages back to the page cache; the drops before a connection and the later rounds
        // keep them cached, or each would read them from the disk again.
        XCTAssertEqual(seen.filter { $0.handedBack > 0 }.count, 8, "\(seen.map(\.handedBack))")
        XCTAssertGreaterThan(seen[0].handedBack, 0, "the drop before the arguments hands back")
        let lastHandingBack = try XCTUnwrap(seen.lastIndex { $0.handedBack > 0 })
        XCTAssertGreaterThanOrEqual(seen.count - 1 - lastHandingBack, 2, "later rounds keep the pages cached: \(seen.map(\.handedBack))")
        print("measured: \(seen.count) drops; POSIX_FADV_DONTNEED calls in each: \(seen.map(\.handedBack))")
    }
}
