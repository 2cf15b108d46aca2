import Foundation
import Platform
import XCTest

/// The reader of /proc/PID/maps that the daemon's page drops use (Sources/Platform/Proc/MapsLine.swift):
/// the fields of a line, a path with spaces in it, and the whole of a real process's file.
final class MapsLineTests: XCTestCase {
    func testTheFieldsOfALine() throws {
        let line = try XCTUnwrap(MapsLine("7f1c2a400000-7f1c2a428000 r--p 00000000 fe:01 1837 /usr/lib/x86_64-linux-gnu/libc.so.6"))
        XCTAssertEqual(line.start, 0x7f1c_2a40_0000)
        XCTAssertEqual(line.end, 0x7f1c_2a42_8000)
        XCTAssertEqual(line.permissions, "r--p")
        XCTAssertEqual(line.inode, "1837")
        XCTAssertEqual(line.path, "/usr/lib/x86_64-linux-gnu/libc.so.6")

        let anonymous = try XCTUnwrap(MapsLine("7ffd5e9c1000-7ffd5e9e2000 rw-p 00000000 00:00 0 "))
        XCTAssertEqual(anonymous.path, "")
        XCTAssertEqual(anonymous.inode, "0")
        let named = try XCTUnwrap(MapsLine("55d0c0a2b000-55d0c0a4c000 rw-p 00000000 00:00 0                          [heap]"))
        XCTAssertEqual(named.path, "[heap]")
    }

    func testALineThatIsNotAMappingIsRefused() {
        XCTAssertNil(MapsLine(""))
        XCTAssertNil(MapsLine("Rss:                   4 kB"))
        XCTAssertNil(MapsLine("7f1c2a428000-7f1c2a400000 r--p 00000000 fe:01 1837 /lib/x"), "an end before its start")
        XCTAssertNil(MapsLine("7f1c2a4g0000-7f1c2a428000 r--p 00000000 fe:01 1837 /lib/x"), "a bound that is not hex")
        XCTAssertNil(MapsLine("7f1c2a400000 r--p 00000000 fe:01 1837 /lib/x"), "no end")
    }

    /// A file mapped by this process, with spaces in its name, is found in its own maps
    /// with its whole path and its address; the file is read to its end (a test process
    /// maps far more than the page the kernel hands out per read).
    func testThisProcessesOwnMapsAreReadWhole() throws {
        let directory = NSTemporaryDirectory() + "maps line \(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/a mapped  file "
        try Data(repeating: 7, count: 3 * 4_096).write(to: URL(fileURLWithPath: path))
        let descriptor = open(path, O_RDONLY)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        defer { close(descriptor) }
        let address = try XCTUnwrap(mmap(nil, 3 * 4_096, PROT_READ, MAP_PRIVATE, descriptor, 0))
        XCTAssertNotEqual(address, MAP_FAILED)
        defer { munmap(address, 3 * 4_096) }

        // FileHandle reads to the end (String(contentsOfFile:) stops after the first read).
        func referenceLines() throws -> (count: Int, bytes: Int) {
            let reference = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/self/maps"))
            defer { try? reference.close() }
            let text = String(decoding: try XCTUnwrap(try reference.readToEnd()), as: UTF8.self)
            return (text.split(separator: "\n").count, text.utf8.count)
        }
        // The test runner's other threads map and unmap (stacks, allocations) while this
        // reads: the count is compared from a read between two that agree.
        var mappings: [MapsLine] = []
        var reference = (count: -1, bytes: 0)
        for _ in 0 ..< 20 {
            let before = try referenceLines()
            mappings = try XCTUnwrap(MapsLine.read("self"))
            let after = try referenceLines()
            reference = after
            if before.count == after.count { break }
        }
        XCTAssertGreaterThan(reference.bytes, 8_192, "the test needs a maps file longer than one read")
        XCTAssertEqual(mappings.count, reference.count, "every line read, to the end")
        let mapped = try XCTUnwrap(mappings.first { $0.start == UInt(bitPattern: address) })
        XCTAssertEqual(mapped.path, path, "the path whole, its inner and trailing spaces kept")
        XCTAssertEqual(mapped.end - mapped.start, 3 * 4_096)
        XCTAssertEqual(mapped.permissions, "r--p")
        XCTAssertNil(mapped.anonymousKiB)

        let withPages = try XCTUnwrap(MapsLine.read("self", withAnonymousPages: true))
        let sameMapping = try XCTUnwrap(withPages.first { $0.start == UInt(bitPattern: address) })
        XCTAssertEqual(sameMapping.anonymousKiB, 0, "smaps' Anonymous line is the mapping's")
    }
}
