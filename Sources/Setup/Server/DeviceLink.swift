import AgentCore
import Foundation
import Synchronization
import Upload

/// Whether a Virtues server has linked this device yet. On Virtues the device's own id
/// is its token once the person has linked the id in the web UI; until then the id is
/// refused like any unknown token. The cheapest request that tells the two apart is
/// `GET {endpoint}/api/devices/health` with the id as the token: `200` once linked,
/// `401` before, and nothing stored or changed on the server (docs/install.md).
public struct DeviceLinkCheck: Sendable {
    public static let path = "/api/devices/health"

    public enum State: Sendable, Equatable {
        case linked
        /// The server answered and does not know the id yet.
        case notYet
        /// Worth another try: no answer, a time-out, a busy or failing server.
        case trouble(message: String, hint: String)
        /// Waiting cannot help: not a server that links devices, or one that refuses every device.
        case stop(message: String, hint: String)
    }

    public var server: ServerConfig
    public var timeout: Int

    public init(server: ServerConfig, timeout: Int) {
        self.server = server
        self.timeout = max(1, timeout)
    }

    public var url: String {
        var base = server.endpoint
        while base.hasSuffix("/") { base.removeLast() }
        return base + Self.path
    }

    public func check(isCancelled: @escaping @Sendable () -> Bool = { false }) -> State {
        let url = url
        let token = server.deviceID
        let result = ServerRequest.send(server: server, timeout: timeout, isCancelled: isCancelled) { _ in
            .get(url: url, headers: [("Authorization", "Bearer \(token)")])
        }
        switch result {
        case .failure(let failure):
            let judged = ServerVerifier.judge(failure, url: url, timeout: timeout, elapsed: 0)
            return .trouble(message: judged.message, hint: judged.hint ?? "check the endpoint")
        case .success(let response):
            return Self.judge(response, url: url)
        }
    }

    static func judge(_ response: HTTPResponse, url: String) -> State {
        let said = ServerVerifier.serverWords(response.body, json: (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any])
        switch response.status {
        case 200..<300 where ((try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]) != nil:
            return .linked
        case 200..<300:
            return .stop(message: "\(AgentErrorCode.notIngestEndpoint.rawValue) HTTP \(response.status) from \(url), but not the server's answer\(said)",
                         hint: "check the endpoint: it must be the server's base URL (a login page or a proxy may be answering)")
        case 401 where EveryDeviceRefused.matches(response):
            return .stop(message: "HTTP 401: \(EveryDeviceRefused.explanation)",
                         hint: "no device can link with it: update the server (or ask its administrator), then run onboard --link again")
        case 401, 403:
            return .notYet
        case 404, 405:
            return .stop(message: "this server has no \(Self.path) (HTTP \(response.status)): it does not link devices by their id",
                         hint: "check the endpoint; an Ariata server pairs with the code its web UI shows: onboard --code CODE")
        case 300..<400:
            return .stop(message: "the server redirects (HTTP \(response.status)) to \(response.headers["location"] ?? "an address it does not give")",
                         hint: "use the address it redirects to as the endpoint (the agent does not follow redirects)")
        case 408, 429, 500..<600:
            return .trouble(message: "HTTP \(response.status) from \(url)\(said)", hint: "the server is busy or failing; the check is repeated")
        default:
            return .stop(message: "unexpected answer HTTP \(response.status) from \(url)\(said)", hint: "check the endpoint")
        }
    }
}

/// Waits for the link: asks `check` every `interval` seconds until it says linked, a
/// time limit passes, or Ctrl-C. Time is the monotonic clock's. The caller has had the
/// server's first answer (so a wrong endpoint fails at once, not after the time limit);
/// later trouble (the server away for a while) is reported and the check repeated.
public struct DeviceLinkWait {
    public enum Outcome: Equatable {
        case linked(after: Duration)
        case timedOut(lastTrouble: String?)
        case interrupted
        case stopped(message: String, hint: String)
    }

    public var limit: Duration
    public var interval: Duration = .seconds(2)
    public var interruption: Interruption

    public init(limit: Duration, interruption: Interruption) {
        self.limit = limit
        self.interruption = interruption
    }

    /// - Parameter onTrouble: hears each new problem once.
    public func run(check: () -> DeviceLinkCheck.State, onTrouble: (String, String) -> Void) -> Outcome {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + limit
        var lastTrouble: String?
        while true {
            let next = min(clock.now + interval, deadline)
            while clock.now < next {
                if interruption.happened { return .interrupted }
                Thread.sleep(forTimeInterval: 0.1)
            }
            if interruption.happened { return .interrupted }
            let state = check()
            // Ctrl-C during the request cancels it: not a problem of the server's to report.
            if interruption.happened { return .interrupted }
            switch state {
            case .linked:
                return .linked(after: clock.now - start)
            case .stop(let message, let hint):
                return .stopped(message: message, hint: hint)
            case .trouble(let message, let hint):
                if message != lastTrouble { onTrouble(message, hint) }
                lastTrouble = message
            case .notYet:
                lastTrouble = nil
            }
            if clock.now >= deadline { return .timedOut(lastTrouble: lastTrouble) }
        }
    }
}

/// Ctrl-C (SIGINT) while one exists sets a flag instead of ending the process, so a long
/// wait can say what happened and what was (not) written. One at a time (the handler is
/// process-wide); the previous handler is back when it goes.
public final class Interruption: Sendable {
    // Set by the signal handler (an atomic store is async-signal-safe), read by the wait.
    private static let flag = Atomic<Bool>(false)
    private let previous: (@convention(c) (Int32) -> Void)?

    public init() {
        Self.flag.store(false, ordering: .relaxed)
        previous = signal(SIGINT) { _ in Interruption.flag.store(true, ordering: .relaxed) }
    }

    deinit {
        signal(SIGINT, previous)
    }

    public var happened: Bool { Self.flag.load(ordering: .relaxed) }
}
