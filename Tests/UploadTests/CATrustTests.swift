import Foundation
import TestRigs
import XCTest
@testable import Upload

/// Where TLS verification takes its CAs from: `ca_file` as a file or a directory, or the
/// system's directory by hash, never a bundle parsed whole when a directory will do.
final class CATrustTests: XCTestCase {
    func testCAFileAsAFileIsABundleAndAsADirectoryIsADirectory() throws {
        let directory = try TemporaryDirectory("ariata-ca")
        let file = directory.path + "/ca.pem"
        try Data("not read here".utf8).write(to: URL(fileURLWithPath: file))
        XCTAssertEqual(CATrust.resolve(caFile: file, systemDirectory: "/etc/ssl/certs"), .bundle(file))
        XCTAssertEqual(CATrust.resolve(caFile: directory.path, systemDirectory: "/etc/ssl/certs"), .directory(directory.path))
    }

    func testWithoutCAFileTheSystemDirectoryIsUsedOnlyWhenItHoldsHashedNames() throws {
        let directory = try TemporaryDirectory("ariata-ca")
        let system = directory.path + "/certs"
        try FileManager.default.createDirectory(atPath: system, withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: system + "/ca-certificates.crt"))
        try Data().write(to: URL(fileURLWithPath: system + "/ISRG_Root_X1.pem"))
        // A bundle and PEM files but no names OpenSSL looks up: libcurl's own defaults.
        XCTAssertEqual(CATrust.resolve(caFile: nil, systemDirectory: system), .libraryDefaults)
        try FileManager.default.createSymbolicLink(atPath: system + "/4042bcee.0", withDestinationPath: "ISRG_Root_X1.pem")
        XCTAssertEqual(CATrust.resolve(caFile: nil, systemDirectory: system), .directory(system))
        XCTAssertEqual(CATrust.resolve(caFile: nil, systemDirectory: directory.path + "/missing"), .libraryDefaults)
        XCTAssertEqual(CATrust.resolve(caFile: nil, systemDirectory: nil), .libraryDefaults)
    }

    func testHashedNames() {
        for name in ["002c0b4f.0", "4042bcee.1", "ABCDEF01.12"] { XCTAssertTrue(CATrust.isHashedName(name), name) }
        for name in ["ca-certificates.crt", "002c0b4f", "002c0b4f.", "002c0b4g.0", "02c0b4f.0", "002c0b4f.0.pem", "002c0b4f.r0"] {
            XCTAssertFalse(CATrust.isHashedName(name), name)
        }
    }

    /// On this machine libcurl was built with a CA directory, and the system's has hashed
    /// names (ca-certificates): the default trust is that directory, not the bundle.
    func testTheSystemDefaultIsTheDirectoryOnDebian() throws {
        guard let system = CurlRuntime.defaultCADirectory else { throw XCTSkip("this libcurl has no default CA directory") }
        guard CATrust.holdsHashedNames(system) else { throw XCTSkip("\(system) holds no hashed names (ca-certificates not installed)") }
        XCTAssertEqual(CATrust.resolve(caFile: nil, systemDirectory: system), .directory(system))
    }
}
