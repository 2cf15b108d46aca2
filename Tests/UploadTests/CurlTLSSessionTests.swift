import AgentCore
import Foundation
import TestRigs
import XCTest
@testable import Upload

/// Every libcurl handle of the process shares its TLS sessions (`CurlTLSSessions`): a new
/// transport, as each upload cycle and each ask for the switches makes, resumes the session
/// an earlier one got from the same server instead of a full handshake. The server is
/// OpenSSL's own (`openssl s_server -www`), whose page says whether the connection that
/// asked for it was new or resumed.
final class CurlTLSSessionTests: XCTestCase {
    func testANewTransportResumesTheSessionAnEarlierOneGot() throws {
        let directory = try TemporaryDirectory("ariata-tls-sessions")
        let tls = try SelfSignedCertificate(in: directory.path)
        let port = try FreePort.find()
        let server = try ChildProcess("/usr/bin/openssl", [
            "s_server", "-www", "-accept", "127.0.0.1:\(port)", "-cert", tls.certificate, "-key", tls.key,
        ], name: "s_server", logDirectory: directory.path)
        defer { server.stop(grace: 1) }

        var config = ServerConfig()
        config.endpoint = "https://127.0.0.1:\(port)"
        config.caFile = tls.certificate
        let settings = ServerSettings(config)
        func page() throws -> String? {
            let transport = try CurlTransport(settings: settings)
            guard case .success(let response) = transport.send(.get(url: "\(config.endpoint)/", headers: [])) else { return nil }
            XCTAssertEqual(response.status, 200)
            return String(decoding: response.body, as: UTF8.self)
        }
        var first: String?
        try waitUntil("openssl s_server to answer on \(port)", timeout: 20, interval: 0.1) {
            first = try page()
            return first != nil
        }
        XCTAssertTrue(first?.contains("\nNew, TLS") ?? false, first ?? "")
        let second = try XCTUnwrap(try page(), "the server answered once and then not")
        XCTAssertTrue(second.contains("\nReused, TLS"), "a second transport made a full handshake:\n\(second)")
    }
}
