import CGPS
import Foundation

/// Why the gpsd connection is not delivering. The description is the reason shown by
/// `liveness()` and `status`, so each case says what to do.
public enum GPSDError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `gps_open` failed: nothing listens there, the name does not resolve, ...
    case unreachable(endpoint: String, detail: String)
    /// Connected, but the WATCH request could not be sent.
    case watchFailed(endpoint: String, detail: String)
    /// The connection was up and then ended (gpsd stopped, or sent something libgps
    /// cannot take, such as a line longer than its buffer).
    case lost(endpoint: String, detail: String)

    /// What went wrong, without the advice.
    public var detail: String {
        switch self {
        case .unreachable(_, let detail), .watchFailed(_, let detail), .lost(_, let detail): return detail
        }
    }

    public var description: String {
        switch self {
        case .unreachable(let endpoint, let detail):
            return "cannot reach gpsd at \(endpoint): \(detail); is gpsd running? "
                + "check 'systemctl status gpsd' and gpsd_host/gpsd_port in [location]"
        case .watchFailed(let endpoint, let detail):
            return "connected to gpsd at \(endpoint) but could not ask it for reports: \(detail); "
                + "check that gpsd (not another program) listens there"
        case .lost(let endpoint, let detail):
            return "lost the connection to gpsd at \(endpoint): \(detail); reconnecting"
        }
    }

    /// `gps_open` reports failures as libgps netlib codes in errno rather than as errno
    /// values; only the codes a user can meet get their own words.
    static func openFailure(code: Int32, host: String, endpoint: String) -> GPSDError {
        let detail: String
        switch code {
        case NL_NOCONNECT: detail = "connection refused"
        case NL_NOHOST: detail = "host name '\(host)' does not resolve"
        case NL_NOSERVICE: detail = "port is not valid"
        case NL_NOSOCK: detail = "cannot create a socket (out of file descriptors?)"
        default:
            if let text = gps_errstr(code) {
                detail = String(cString: text)
            } else {
                detail = "libgps error \(code)"
            }
        }
        return .unreachable(endpoint: endpoint, detail: detail)
    }
}
