import AgentCore
import Foundation
import TestRigs
import XCTest

/// The shipped units, checked by systemd's own tools.
final class SystemdUnitTests: XCTestCase {
    var root: String { Repository.root }

    /// `systemd-analyze verify` must be silent: any warning fails.
    func testUnitsVerifyWithoutAWarning() throws {
        let dir = try TemporaryDirectory("unit")
        // verify checks that ExecStart exists: point it at the binary we built.
        let binary = try BuildProducts.executable("ariata-agent")
        let system = try String(contentsOfFile: "\(root)/systemd/ariata-agent.service", encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/ariata-agent", with: binary)
        try system.write(toFile: dir.file("ariata-agent.service"), atomically: true, encoding: .utf8)
        let verify = try ChildProcess("systemd-analyze", ["verify", dir.file("ariata-agent.service")], logDirectory: dir.path)
        XCTAssertEqual(verify.wait(timeout: 60), 0, verify.stderr())
        XCTAssertEqual(verify.stderr().trimmingCharacters(in: .whitespacesAndNewlines), "", "warnings: \(verify.stderr())")
        XCTAssertEqual(verify.stdout().trimmingCharacters(in: .whitespacesAndNewlines), "")
    }

    func testSecurityExposureIsAtMost2() throws {
        let dir = try TemporaryDirectory("unit-security")
        let analyze = try ChildProcess("systemd-analyze", ["security", "--offline=true", "--no-pager",
                                                          "\(root)/systemd/ariata-agent.service"],
                                       logDirectory: dir.path)
        analyze.wait(timeout: 60)
        let output = analyze.stdout()
        let line = try XCTUnwrap(output.split(separator: "\n").first { $0.contains("Overall exposure level") }, output)
        // "→ Overall exposure level for ariata-agent.service: 1.6 OK 🙂"
        let figure = try XCTUnwrap(line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }, String(line))
        print("systemd-analyze security exposure of ariata-agent.service: \(figure)")
        XCTAssertLessThanOrEqual(figure, 2.0, String(line))
    }

    /// Both units give the daemon the same environment, which the test rigs and the
    /// benchmarks run it with too (DaemonRig.unitEnvironment), but for the one variable
    /// that says which service it is (GeoClue's agent, desktop notices: docs/laptop.md).
    func testBothUnitsGiveTheDaemonTheSameEnvironment() throws {
        var system = try DaemonRig.unitEnvironment()
        var user = try DaemonRig.unitEnvironment(unit: DaemonRig.userUnit)
        XCTAssertEqual(user.removeValue(forKey: ServiceMode.environmentVariable), "user")
        XCTAssertEqual(system.removeValue(forKey: ServiceMode.environmentVariable), "system")
        XCTAssertEqual(system, user)
        XCTAssertEqual(system["GNUTLS_NO_IMPLICIT_INIT"], "1")
    }

    /// The system unit's settings, parsed: how systemd starts, watches and confines the
    /// daemon (docs/install.md, "The systemd unit").
    func testTheUnitStartsWatchesAndConfinesTheDaemon() throws {
        let unit = try UnitFile(contentsOf: "\(root)/systemd/ariata-agent.service")
        let exact: [(String, [String])] = [
            ("Type", ["notify"]), ("Restart", ["on-failure"]), ("WatchdogSec", ["120s"]),
            ("SupplementaryGroups", ["audio dialout"]), ("StateDirectory", ["ariata"]), ("ConfigurationDirectory", ["ariata"]),
            ("ProtectSystem", ["strict"]), ("ProtectHome", ["yes"]), ("PrivateTmp", ["yes"]), ("NoNewPrivileges", ["yes"]),
            ("RestrictAddressFamilies", ["AF_UNIX AF_INET AF_INET6 AF_NETLINK"]),
        ]
        for (key, values) in exact {
            XCTAssertEqual(unit.values("Service", key), values, key)
        }
        XCTAssertEqual(unit.values("Service", "SystemCallFilter").first, "@system-service")
        XCTAssertTrue(unit.values("Service", "DeviceAllow").contains("char-alsa rw"), "\(unit.values("Service", "DeviceAllow"))")
        XCTAssertEqual(unit.values("Service", "ExecStart"), ["/usr/local/bin/ariata-agent run --config /etc/ariata/agent.toml"])
    }
}
