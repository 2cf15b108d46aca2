import AgentCore
import Foundation

/// `ariata-agent doctor`: onboarding's checks again, any time: the config, the server
/// (when one is configured) and the device checks of the enabled streams.
public struct Doctor: Sendable {
    public var checks: DeviceChecks
    /// Seconds to wait for the server (nil: the config's request_timeout).
    public var timeout: Int?

    public init(checks: DeviceChecks = DeviceChecks(), timeout: Int? = nil) {
        self.checks = checks
        self.timeout = timeout
    }

    public func run(configPath: String) -> DoctorReport {
        var results: [DeviceCheck] = []
        let config: AgentConfig
        do {
            let exists = FileManager.default.fileExists(atPath: configPath)
            config = try AgentConfig.load(path: configPath, missingOK: true)
            results.append(exists
                ? DeviceCheck(name: "configuration \(configPath)", outcome: .ok, detail: "reads")
                : DeviceCheck(name: "configuration \(configPath)", outcome: .warning,
                              detail: "no such file: checking the defaults", fix: "sudo ariata-agent onboard"))
        } catch {
            results.append(DeviceCheck(name: "configuration \(configPath)", outcome: .failed, detail: "\(error)",
                                       fix: "correct the key it names (every key is explained in etc/agent.toml), or run onboard again"))
            return DoctorReport(configFile: configPath, checks: results)
        }
        if config.box.isPaired {
            // A Virtues box: who it is (any answer names its build), then one request over iroh.
            let (check, _) = ServerIdentityStep.check(config.server, timeout: timeout)
            results.append(check)
            results.append(BoxVerifier(server: config.server, box: config.box, timeout: timeout).verify().check)
        } else if config.server.isOnboarded {
            let (check, identity) = ServerIdentityStep.check(config.server, timeout: timeout)
            results.append(check)
            let verification = ServerVerifier(server: config.server, timeout: timeout).verify()
            results.append(verification.asCheck)
            if verification.outcome == .everyDeviceRefused, let note = ServerIdentityStep.loginWallNote(identity) {
                results.append(DeviceCheck(name: "server build", outcome: .failed, detail: note))
            }
        } else {
            results.append(DeviceCheck(name: "server", outcome: .warning, detail: "not set up: nothing can be uploaded",
                                       fix: "sudo ariata-agent onboard"))
        }
        let streams = [("location", config.location.enabled), ("microphone", config.microphone.enabled),
                       ("health", config.health.enabled)]
        let off = streams.filter { !$0.1 }.map(\.0)
        if !off.isEmpty {
            results.append(DeviceCheck(name: "streams", outcome: .ok, detail: "disabled in the config, not checked: \(off.joined(separator: ", "))"))
        }
        results += checks.run(config)
        return DoctorReport(configFile: configPath, checks: results)
    }
}

/// What doctor found; `--json` prints it with a stable schema (schema_version 1):
/// `{"schema_version":1,"config_file":…,"ok":bool,"failed":N,"warnings":N,
///   "checks":[{"name":…,"stream":…|null,"outcome":"ok"|"warning"|"failed","detail":…,"fix":…|null}]}`.
public struct DoctorReport: Sendable {
    public var configFile: String
    public var checks: [DeviceCheck]

    /// No check failed (warnings do not count).
    public var ok: Bool { !checks.contains { $0.outcome == .failed } }

    public func text(printer: CheckPrinter) -> String {
        let failed = checks.filter { $0.outcome == .failed }.count
        let warnings = checks.filter { $0.outcome == .warning }.count
        var out = "ariata-agent doctor (\(configFile))\n" + printer.render(checks)
        if failed == 0 {
            out += "all checks passed" + (warnings > 0 ? " (\(warnings) warning\(warnings == 1 ? "" : "s"))" : "") + "\n"
        } else {
            out += "\(failed) check\(failed == 1 ? "" : "s") failed: see the fix under each\n"
        }
        return out
    }

    public func json() throws -> Data {
        let entries: [[String: Any]] = checks.map { check in
            [
                "name": check.name, "stream": check.stream?.rawValue ?? NSNull(), "outcome": check.outcome.rawValue,
                "detail": check.detail, "fix": check.fix ?? NSNull(),
            ]
        }
        let object: [String: Any] = [
            "schema_version": 1, "config_file": configFile, "ok": ok,
            "failed": checks.filter { $0.outcome == .failed }.count,
            "warnings": checks.filter { $0.outcome == .warning }.count,
            "checks": entries,
        ]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
    }
}
