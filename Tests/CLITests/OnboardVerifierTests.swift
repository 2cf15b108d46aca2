import AgentCore
import Foundation
import Setup
import TestRigs
import XCTest

/// `ServerVerifier` in-process against the reference receiver told to misbehave: the
/// answers a scripted onboarding rarely meets, each mapped to its own outcome and advice.
final class OnboardVerifierTests: XCTestCase {
    func server(_ endpoint: String, token: String = "v-token") -> ServerConfig {
        var server = ServerConfig()
        server.endpoint = endpoint
        server.token = Secret(token)
        server.deviceID = "verifier-test"
        return server
    }

    func testAnswersAndBrokenConnectionsMapToTheirOwnOutcome() throws {
        let dir = try TemporaryDirectory("verifier")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "v-token")
        defer { receiver.stop() }
        let verifier = ServerVerifier(server: server(receiver.endpoint), timeout: 5)

        let cases: [(fault: String, outcome: ServerVerification.Outcome, text: String)] = [
            ("status=503", .serverError, "E003 the server failed (HTTP 503)"),
            ("status=500", .serverError, "E003"),
            ("status=429", .busy, "busy (HTTP 429)"),
            ("status=307", .redirected, "redirects (HTTP 307)"),
            ("status=403", .tokenRefused, "E002"),
            // JSON 400 to the empty batch: the token passed, the server only dislikes empty batches.
            ("status=400", .verifiedRefusingEmptyBatch, "refuses an empty batch (HTTP 400)"),
            ("status=422", .verifiedRefusingEmptyBatch, "refuses an empty batch (HTTP 422)"),
            ("reset", .connectionLost, "closed without an answer"),
            ("close", .connectionLost, "closed without an answer"),
        ]
        for c in cases {
            try receiver.addFaults([c.fault])
            let result = verifier.verify()
            XCTAssertEqual(result.outcome, c.outcome, "\(c.fault): \(result.message)")
            XCTAssertTrue(result.message.contains(c.text), "\(c.fault): \(result.message)")
            XCTAssertNotNil(result.hint, "\(c.fault): every problem says what to do")
        }
        let verified = verifier.verify()
        XCTAssertEqual(verified.outcome, .verified, verified.message)
        XCTAssertEqual(verified.status, 200)
        XCTAssertNil(verified.errorCode)
        XCTAssertTrue(verified.asCheck.outcome == .ok)
        XCTAssertEqual(try receiver.stats().records.values.reduce(0, +), 0, "verification stores nothing")
    }

    /// TLS is verified: a self-signed server fails with the --ca-file advice until its
    /// certificate is given.
    func testASelfSignedServerNeedsItsCAFile() throws {
        let dir = try TemporaryDirectory("verifier-tls")
        let tls = try SelfSignedCertificate(in: dir.path)
        let certificate = tls.certificate
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "v-token", tls: tls.pair)
        defer { receiver.stop() }

        var config = server(receiver.endpoint)
        let refused = ServerVerifier(server: config, timeout: 5).verify()
        XCTAssertEqual(refused.outcome, .tls, refused.message)
        XCTAssertTrue(refused.message.contains("certificate is not trusted"), refused.message)
        XCTAssertTrue(refused.hint?.contains("--ca-file") ?? false)

        config.caFile = certificate
        let verified = ServerVerifier(server: config, timeout: 5).verify()
        XCTAssertEqual(verified.outcome, .verified, verified.message)

        // The same through the command: refused without --ca-file, nothing written;
        // with it, verified and saved as [server] ca_file.
        let cli = AgentCLI(directory: dir.path, configPath: dir.file("tls.toml"))
        let untrusted = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", "v-token", "--yes"])
        XCTAssertEqual(untrusted.status, 1, untrusted.stdout + untrusted.stderr)
        XCTAssertTrue(untrusted.stdout.contains("TLS certificate is not trusted"), untrusted.stdout)
        XCTAssertTrue(untrusted.stdout.contains("--ca-file"), untrusted.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: cli.configPath))
        let noFile = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", "v-token", "--ca-file", dir.file("none.pem"), "--yes"])
        XCTAssertEqual(noFile.status, 64)
        XCTAssertTrue(noFile.stderr.contains("--ca-file \(dir.file("none.pem")): cannot read it"), noFile.stderr)
        let trusted = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", "v-token", "--ca-file", certificate,
                                   "--device-name", "tls-box", "--yes"])
        XCTAssertEqual(trusted.status, 0, trusted.stdout + trusted.stderr)
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).server.caFile, certificate)
    }
}
