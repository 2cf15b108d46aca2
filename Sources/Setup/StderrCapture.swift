import Foundation

/// Runs a C call with file descriptor 2 pointing into a pipe, and returns what it wrote
/// there. alsa-lib prints its own diagnostics ("ALSA lib confmisc.c:855:(parse_card) cannot
/// find card '0'") straight to stderr; the probe folds the useful part into its check's
/// detail instead of letting eight lines of them interleave with the checks. Only for the
/// short, single-threaded probes of onboard and doctor: fd 2 is process-wide.
enum StderrCapture {
    static func during<T>(_ body: () -> T) -> (result: T, text: String) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return (body(), "") }
        let saved = dup(STDERR_FILENO)
        // Non-blocking: a chatty library must not block on a full pipe nobody reads yet.
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        dup2(fds[1], STDERR_FILENO)
        let result = body()
        fflush(nil)  // every C stream, stderr among them
        if saved >= 0 {
            dup2(saved, STDERR_FILENO)
            close(saved)
        }
        close(fds[1])
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let n = read(fds[0], &buffer, buffer.count)
            guard n > 0 else { break }
            data.append(contentsOf: buffer[0..<n])
        }
        close(fds[0])
        return (result, String(decoding: data, as: UTF8.self))
    }

    /// The message of alsa-lib's first diagnostic line, without its source location.
    static func firstALSAMessage(_ text: String) -> String? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ALSA lib") }) else { return nil }
        if let close = line.range(of: ") ") { return String(line[close.upperBound...]) }
        return String(line)
    }
}
