import AgentCore
import Foundation
import Platform
import TestRigs
import XCTest

/// `FileWrites.replace` on real files: a temporary directory, and a small tmpfs that
/// another program fills.
final class FileWritesTests: XCTestCase {
    func mount() throws -> SmallFilesystem {
        do {
            return try SmallFilesystem.make(.tmpfs, megabytes: 4)
        } catch let error as CannotMount {
            throw XCTSkip(error.description)
        }
    }

    func mode(_ path: String) throws -> Int {
        try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber).intValue & 0o777
    }

    func testReplacesTheFileWithTheModeAskedForAndLeavesNoTemporaryFile() throws {
        let dir = try TemporaryDirectory("file-writes")
        let path = dir.file("agent.toml")
        try "old".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o644)
        // A large write, so that a single write(2) that came back short would show.
        let bytes = Data((0 ..< 3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try FileWrites.replace(path, with: bytes, mode: 0o600, durable: true)
        XCTAssertEqual(FileManager.default.contents(atPath: path), bytes)
        XCTAssertEqual(try mode(path), 0o600)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["agent.toml"])

        // The mode is the one asked for, whatever the umask takes away from open's.
        let saved = umask(0o077)
        defer { umask(saved) }
        try FileWrites.replace(path, with: Data("new".utf8), mode: 0o644, durable: false)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "new")
        XCTAssertEqual(try mode(path), 0o644)
    }

    func testFailuresNameTheStepThePathAndTheErrno() throws {
        let dir = try TemporaryDirectory("file-writes")
        XCTAssertThrowsError(try FileWrites.replace(dir.file("missing/agent.toml"), with: Data("x".utf8), mode: 0o600, durable: true)) { error in
            guard let failure = error as? FileWriteError else { return XCTFail("\(error) is not a FileWriteError") }
            XCTAssertEqual(failure.step, .create)
            XCTAssertEqual(failure.code, ENOENT)
            XCTAssertFalse(failure.isDiskFull)
            XCTAssertEqual(failure.description, "create \(dir.path)/missing/.agent.toml.\(getpid()).tmp: No such file or directory")
        }
        // A directory where the file should be: the rename fails and nothing is left behind.
        try FileManager.default.createDirectory(atPath: dir.file("taken/sub"), withIntermediateDirectories: true)
        XCTAssertThrowsError(try FileWrites.replace(dir.file("taken"), with: Data("x".utf8), mode: 0o600, durable: true)) { error in
            XCTAssertEqual((error as? FileWriteError)?.step, .rename)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["taken"])
    }

    /// Another program has filled the disk: the write fails with ENOSPC, the old file is
    /// whole and no temporary file takes room.
    func testAFullDiskLeavesTheOldFileAndNoTemporaryFile() throws {
        let fs = try mount()
        let path = fs.file("metrics.prom")
        try FileWrites.replace(path, with: Data("old\n".utf8), mode: 0o644, durable: true)
        try fs.fillWithAnotherProgram()
        XCTAssertThrowsError(try FileWrites.replace(path, with: Data(repeating: 7, count: 1_048_576), mode: 0o644, durable: true)) { error in
            guard let failure = error as? FileWriteError else { return XCTFail("\(error) is not a FileWriteError") }
            XCTAssertTrue(failure.isDiskFull, "\(failure)")
            XCTAssertEqual(failure.step, .write)
        }
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "old\n")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: fs.path).sorted(), ["filler", "metrics.prom"])
    }

    /// The configuration (it holds the device token) on a full disk: refused with the
    /// reason, the old file kept.
    func testTheConfigWriterOnAFullDiskKeepsTheOldFile() throws {
        let fs = try mount()
        let path = fs.file("agent.toml")
        var config = AgentConfig()
        config.file = path
        config.server.endpoint = "https://a.example.org"
        try ConfigWriter.write(config, to: path)
        let old = try String(contentsOfFile: path, encoding: .utf8)
        try fs.fillWithAnotherProgram()
        var changed = config
        changed.server.deviceName = String(repeating: "n", count: 100_000)
        XCTAssertThrowsError(try ConfigWriter.write(changed, to: path)) { error in
            XCTAssertEqual("\(error)", "\(path): cannot write: No space left on device")
        }
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), old)
        XCTAssertEqual(try mode(path), 0o600)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: fs.path).sorted(), ["agent.toml", "filler"])
    }

    /// Handed to the service user when root writes it for one.
    func testTheConfigWriterHandsTheFileToItsOwner() throws {
        guard getuid() == 0, let nobody = getpwnam("nobody") else { throw XCTSkip("needs root and the user nobody") }
        let dir = try TemporaryDirectory("file-writes")
        var config = AgentConfig()
        config.file = dir.file("agent.toml")
        try ConfigWriter.write(config, to: config.file, owner: "nobody")
        var info = stat()
        XCTAssertEqual(stat(config.file, &info), 0)
        XCTAssertEqual(info.st_uid, nobody.pointee.pw_uid)
        XCTAssertEqual(info.st_gid, nobody.pointee.pw_gid)
        XCTAssertEqual(Int(info.st_mode) & 0o777, 0o600)
    }
}
