import AgentCore
import Foundation

/// What the person running `onboard` asked for on the command line. Values left nil are
/// asked on a terminal (their default from the existing config), or taken from the
/// existing config with `--yes`.
public struct OnboardRequest: Sendable {
    public var configPath: String
    public var endpoint: String?
    /// The token given with `--token` (or read from `--token-file`).
    public var token: Secret?
    public var tokenFile: String?
    public var deviceName: String?
    public var ingestPath: String?
    public var caFile: String?
    /// Accept every default answer without asking.
    public var acceptDefaults: Bool
    /// Seconds to wait for the server while verifying (nil: the config's request_timeout).
    public var timeout: Int?
    /// The user the daemon runs as: owner of the config, and whose groups are checked.
    public var serviceUser: String
    /// The short code the server's web UI shows for a new device, exchanged for the token.
    public var pairingCode: String?
    /// With `--yes`, switch off a stream whose device check failed (the old behaviour);
    /// by default it stays enabled and reports itself unhealthy until the device is there.
    public var disableFailing: Bool
    /// `--link` (Virtues): show the device id and wait until the server has linked it.
    public var link: Bool
    /// How long `--link` waits for the link (seconds).
    public var linkTimeout: TimeInterval
    /// `--source-id` (Virtues' QR flow): the pending source to complete.
    public var sourceID: String?
    /// `--user-service` or `--system-service`; nil: decided from the sound server (`ServiceModeStep`).
    public var serviceMode: ServiceMode?
    /// `--microphone-device`: the ALSA capture device to write as `[microphone] device`.
    public var microphoneDevice: String?
    /// `--ble-sensor`: the Bluetooth LE heart-rate sensor to set up, by address (upper case).
    public var bleSensor: String?
    /// `--ble-scan`: scan for heart-rate sensors without asking (also with `--yes`).
    public var bleScan: Bool
    /// `--ble-scan-seconds`: how long the scan listens.
    public var bleScanSeconds: TimeInterval

    /// Long enough to hear a strap that advertises every second or two, short enough to wait for.
    public static let defaultBLEScanSeconds: TimeInterval = 8

    /// A pending pairing on the servers lives 10 minutes: `--link` waits as long by default.
    public static let defaultLinkTimeout: TimeInterval = 600

    public init(configPath: String = AgentConfig.defaultPath, endpoint: String? = nil, token: Secret? = nil,
                tokenFile: String? = nil, deviceName: String? = nil, ingestPath: String? = nil, caFile: String? = nil,
                acceptDefaults: Bool = false, timeout: Int? = nil, serviceUser: String = "ariata",
                pairingCode: String? = nil, disableFailing: Bool = false, link: Bool = false,
                linkTimeout: TimeInterval = OnboardRequest.defaultLinkTimeout, sourceID: String? = nil,
                serviceMode: ServiceMode? = nil, microphoneDevice: String? = nil, bleSensor: String? = nil,
                bleScan: Bool = false, bleScanSeconds: TimeInterval = OnboardRequest.defaultBLEScanSeconds) {
        self.bleSensor = bleSensor
        self.bleScan = bleScan
        self.bleScanSeconds = bleScanSeconds
        self.serviceMode = serviceMode
        self.microphoneDevice = microphoneDevice
        self.pairingCode = pairingCode
        self.link = link
        self.linkTimeout = linkTimeout
        self.sourceID = sourceID
        self.disableFailing = disableFailing
        self.configPath = configPath
        self.endpoint = endpoint
        self.token = token
        self.tokenFile = tokenFile
        self.deviceName = deviceName
        self.ingestPath = ingestPath
        self.caFile = caFile
        self.acceptDefaults = acceptDefaults
        self.timeout = timeout
        self.serviceUser = serviceUser
    }
}

/// Why onboarding stopped, with the exit status the command ends with.
public struct OnboardFailure: Error, CustomStringConvertible, Equatable {
    /// The server could not be verified (non-interactive), or the input ended: nothing written.
    public static let notVerified: Int32 = 1
    /// Flags missing or wrong, or no terminal to ask on without `--yes` (EX_USAGE).
    public static let usage: Int32 = 64
    /// The config file could not be written (EX_CANTCREAT).
    public static let cannotWrite: Int32 = 73
    /// The existing config file is broken (EX_CONFIG): onboarding does not overwrite what it cannot read.
    public static let badConfig: Int32 = 78
    /// Stopped with Ctrl-C while waiting for the server (128 + SIGINT, as a shell reports it).
    public static let interrupted: Int32 = 130

    public var message: String
    public var exitCode: Int32

    public init(_ message: String, exitCode: Int32) {
        self.message = message
        self.exitCode = exitCode
    }

    public var description: String { message }
}

extension OnboardRequest {
    /// Reads a token from `--token-file` (surrounding white space dropped), so the token
    /// need not appear on a command line (and in `ps`).
    public static func readToken(file path: String) throws -> Secret {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw OnboardFailure("--token-file \(path): cannot read it (\(String(cString: strerror(errno)))): check the path and its permissions",
                                 exitCode: OnboardFailure.usage)
        }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else {
            throw OnboardFailure("--token-file \(path) is empty: put the device token in it", exitCode: OnboardFailure.usage)
        }
        return Secret(token)
    }

    /// Who answers the questions: defaults with `--yes`, the person at the terminal
    /// otherwise; without a terminal and without `--yes` onboarding cannot ask, and says so
    /// at once rather than waiting on input that never comes.
    public func prompter(console: Console, stdinIsTerminal: Bool = isatty(STDIN_FILENO) != 0) throws -> any Prompter {
        if acceptDefaults { return DefaultAnswers() }
        guard stdinIsTerminal else {
            throw OnboardFailure("""
                standard input is not a terminal, so onboard cannot ask its questions.
                For a scripted install pass the answers as flags and --yes, e.g.
                  ariata-agent onboard --endpoint https://ariata.example.org --code A1B2C3 --yes
                  ariata-agent onboard --endpoint https://ariata.example.org --token-file /root/ariata-token --yes
                  ariata-agent onboard --endpoint https://virtues.example.org --link --yes
                """, exitCode: OnboardFailure.usage)
        }
        return TerminalPrompter(output: console)
    }
}
