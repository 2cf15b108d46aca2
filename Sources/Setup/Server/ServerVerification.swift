import AgentCore
import Foundation

/// What verifying the server found: one outcome, a message that says what happened and a
/// hint that says what to do. Onboarding and doctor print it; onboarding decides from
/// `outcome` what to ask again.
public struct ServerVerification: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// 2xx with a JSON answer: the endpoint is there and took the token.
        case verified
        /// 400/422 with a JSON answer: the server checked the token and then refused the
        /// empty batch itself (see `ServerVerifier` for why this counts as verified).
        case verifiedRefusingEmptyBatch
        /// The endpoint URL is not usable (not http/https, no host).
        case badURL
        /// DNS: the host name did not resolve.
        case nameNotResolved
        /// Refused or unreachable.
        case cannotConnect
        /// The certificate is not trusted, or TLS failed otherwise.
        case tls
        /// Reset or closed before an answer.
        case connectionLost
        /// No answer in time (E001).
        case timedOut
        /// 401/403 (E002).
        case tokenRefused
        /// 401 `{"error":"Unauthorized"}`: a login wall in front of the device routes that
        /// refuses every device (E002, but no other token would pass).
        case everyDeviceRefused
        /// 404/405: nothing that takes a POST at that path.
        case wrongPath
        /// 3xx: the server sends us elsewhere.
        case redirected
        /// 5xx (E003).
        case serverError
        /// 408/429: busy, try again.
        case busy
        /// An answer that is not the ingest endpoint's (HTML, an unexpected status).
        case unexpectedAnswer
        /// A local problem (libcurl could not start, ...).
        case localProblem
    }

    public var outcome: Outcome
    /// The URL that was posted to.
    public var url: String
    /// The HTTP status when there was an answer.
    public var status: Int?
    /// From sending the request to its answer (or failure).
    public var elapsed: TimeInterval
    /// What happened, in one sentence (starts with the error code where there is one).
    public var message: String
    /// What to do about it (nil when verified without a caveat).
    public var hint: String?

    public init(outcome: Outcome, url: String, status: Int? = nil, elapsed: TimeInterval, message: String, hint: String? = nil) {
        self.outcome = outcome
        self.url = url
        self.status = status
        self.elapsed = elapsed
        self.message = message
        self.hint = hint
    }

    public var isVerified: Bool { outcome == .verified || outcome == .verifiedRefusingEmptyBatch }

    /// The error code the daemon would log for the same outcome.
    public var errorCode: AgentErrorCode? {
        switch outcome {
        case .timedOut: return .networkTimeout
        case .tokenRefused, .everyDeviceRefused: return .invalidToken
        case .serverError: return .serverError
        default: return nil
        }
    }

    /// Only the token was wrong: an interactive user is asked for the token alone again.
    public var blamesToken: Bool { outcome == .tokenRefused }

    /// The path was wrong: an interactive user is asked for the ingest path too.
    public var blamesPath: Bool { outcome == .wrongPath }

    /// The same result as a check line for `doctor` and onboarding's output.
    public var asCheck: DeviceCheck {
        let name = "server \(url)"
        if isVerified {
            return DeviceCheck(name: name, outcome: outcome == .verified ? .ok : .warning, detail: message, fix: hint)
        }
        return DeviceCheck(name: name, outcome: .failed, detail: message, fix: hint)
    }
}
