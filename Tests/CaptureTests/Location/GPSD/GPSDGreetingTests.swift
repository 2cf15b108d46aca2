@testable import Capture
import Foundation
import Platform
import TestRigs
import XCTest

/// The device check's question to gpsd, asked through the stream's own client: a real
/// gpsd, other programs on its port, and a connect that does not complete.
final class GPSDGreetingTests: XCTestCase {
    func testARealGPSDGreetsWithItsRelease() throws {
        let rig = try GPSDRig()
        let greeting = try GPSDClient.greeting(host: "127.0.0.1", port: rig.port, timeout: 5)
        guard case .gpsd(let release) = greeting else { return XCTFail("\(greeting)") }
        XCTAssertTrue(release.hasPrefix("3."), release)
    }

    func testAnotherProgramIsNotGPSD() throws {
        let server = try ScriptedTCPServer(scripts: [[.sendLine("SSH-2.0-OpenSSH_9.2p1 Debian-2")]])
        defer { server.stop() }
        XCTAssertEqual(try GPSDClient.greeting(host: "127.0.0.1", port: server.port, timeout: 5), .notGPSD)
    }

    func testAListenerThatSaysNothingIsSilentWhenTheTimeIsUp() throws {
        let server = try ScriptedTCPServer(scripts: [[]])
        defer { server.stop() }
        let started = Monotonic.now
        XCTAssertEqual(try GPSDClient.greeting(host: "127.0.0.1", port: server.port, timeout: 0.5), .silent)
        XCTAssertGreaterThanOrEqual(Monotonic.now - started, 0.5)
        XCTAssertLessThan(Monotonic.now - started, 3)
    }

    func testAConnectionClosedAtOnceIsLostAsTheStreamWouldFindIt() throws {
        let server = try ScriptedTCPServer(scripts: [[.close]])
        defer { server.stop() }
        XCTAssertThrowsError(try GPSDClient.greeting(host: "127.0.0.1", port: server.port, timeout: 5)) { error in
            guard case .lost = error as? GPSDError else { return XCTFail("\(error)") }
        }
    }

    func testNothingListeningIsUnreachable() throws {
        let port = try FreePort.find()
        XCTAssertThrowsError(try GPSDClient.greeting(host: "127.0.0.1", port: port, timeout: 5)) { error in
            XCTAssertEqual((error as? GPSDError)?.detail, "connection refused")
        }
    }

    /// A listener whose accept queue is full drops new SYNs, so a connect to it hangs as one
    /// to a remote host that does not answer would: the check gives up on time.
    func testAConnectThatDoesNotCompleteEndsWithTheTimeLimit() throws {
        let listener = try LoopbackSocket(listening: 0)
        defer { withExtendedLifetime(listener) {} }   // listening until the check is over
        var address = listener.address
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        // Fill the accept queue (nobody accepts).
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<3 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            fillers.append(filler)
            _ = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) }
            }
        }
        usleep(200_000)
        let port = listener.port
        let started = Monotonic.now
        XCTAssertThrowsError(try GPSDClient.greeting(host: "127.0.0.1", port: port, timeout: 1)) { error in
            XCTAssertEqual((error as? GPSDError)?.detail, "no connection within 1 s")
        }
        XCTAssertLessThan(Monotonic.now - started, 3)
    }
}
