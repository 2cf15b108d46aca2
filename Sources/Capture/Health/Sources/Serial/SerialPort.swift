import Foundation

/// A serial device opened in raw mode (termios): no echo, no line editing, no
/// translation of CR/LF, 8 data bits, the receiver on, modem control lines ignored.
public struct SerialPort: Sendable {
    public enum OpenError: Error, Equatable, Sendable {
        case permissionDenied
        case missing
        case unsupportedBaud(Int)
        case other(String)
    }

    public let fd: Int32

    static let speeds: [Int: speed_t] = [
        50: speed_t(B50), 75: speed_t(B75), 110: speed_t(B110), 134: speed_t(B134), 150: speed_t(B150),
        200: speed_t(B200), 300: speed_t(B300), 600: speed_t(B600), 1_200: speed_t(B1200),
        1_800: speed_t(B1800), 2_400: speed_t(B2400), 4_800: speed_t(B4800), 9_600: speed_t(B9600),
        19_200: speed_t(B19200), 38_400: speed_t(B38400), 57_600: speed_t(B57600),
        115_200: speed_t(B115200), 230_400: speed_t(B230400), 460_800: speed_t(B460800),
        500_000: speed_t(B500000), 576_000: speed_t(B576000), 921_600: speed_t(B921600),
        1_000_000: speed_t(B1000000), 1_152_000: speed_t(B1152000), 1_500_000: speed_t(B1500000),
        2_000_000: speed_t(B2000000), 2_500_000: speed_t(B2500000), 3_000_000: speed_t(B3000000),
        3_500_000: speed_t(B3500000), 4_000_000: speed_t(B4000000),
    ]

    /// Opens `path` raw at `baud`: what the serial health source reads through, and what
    /// `onboard` and `doctor` check with.
    public static func open(_ path: String, baud: Int) -> Result<SerialPort, OpenError> {
        guard let speed = speeds[baud] else { return .failure(.unsupportedBaud(baud)) }
        let fd = Glibc.open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case EACCES, EPERM: return .failure(.permissionDenied)
            case ENOENT, ENODEV, ENXIO: return .failure(.missing)
            default: return .failure(.other(String(cString: strerror(errno))))
            }
        }
        var options = termios()
        guard tcgetattr(fd, &options) == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            return .failure(.other("\(path) is not a serial port (\(message))"))
        }
        cfmakeraw(&options)
        options.c_cflag |= tcflag_t(CLOCAL | CREAD)
        // Indices from termios.h; Swift sees c_cc as a tuple.
        withUnsafeMutableBytes(of: &options.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        cfsetispeed(&options, speed)
        cfsetospeed(&options, speed)
        guard tcsetattr(fd, TCSANOW, &options) == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            return .failure(.other("cannot set \(path) to raw mode at \(baud) baud: \(message)"))
        }
        return .success(SerialPort(fd: fd))
    }

    public func close() { Glibc.close(fd) }
}
