import Foundation

/// A one-line progress bar for `sync` and the health backfill: redrawn in place on a
/// terminal, and on anything else (a pipe, a log) printed only when a line is finished,
/// so logs do not fill with carriage returns.
public final class ProgressBar: @unchecked Sendable {
    // @unchecked: used from the one thread that runs the work it reports on.
    private let label: String
    private let width: Int
    private let interactive: Bool
    private let output: (String) -> Void
    private var lastDrawn = ""
    private var finished = false

    public init(label: String, width: Int = 30, interactive: Bool = isatty(STDOUT_FILENO) != 0,
                output: @escaping (String) -> Void = { FileHandle.standardOutput.write(Data($0.utf8)) }) {
        self.label = label
        self.width = width
        self.interactive = interactive
        self.output = output
    }

    /// The text of the bar for `done` of `total` (and an optional detail after it).
    public func line(done: Int64, total: Int64, detail: String) -> String {
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let filled = Int((fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let percent = String(format: "%3d%%", Int((fraction * 100).rounded(.down)))
        return "\(label.padding(toLength: 11, withPad: " ", startingAt: 0)) [\(bar)] \(percent)  \(detail)"
    }

    public func update(done: Int64, total: Int64, detail: String) {
        guard !finished else { return }
        let text = line(done: done, total: total, detail: detail)
        guard interactive, text != lastDrawn else { return }
        lastDrawn = text
        output("\r\u{1B}[2K" + text)
    }

    public func finish(done: Int64, total: Int64, detail: String) {
        guard !finished else { return }
        finished = true
        let text = line(done: done, total: total, detail: detail)
        output((interactive ? "\r\u{1B}[2K" : "") + text + "\n")
    }

    /// "1,234" style counts.
    public static func count(_ n: Int) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.groupingSeparator = ","
        formatter.groupingSize = 3
        formatter.usesGroupingSeparator = true
        return formatter.string(from: NSNumber(value: n)) ?? "\(n)"
    }

    /// "3.4 MB" style sizes (decimal units), as `status` shows them too.
    public static func bytes(_ n: Int64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(n)
        var unit = 0
        while value >= 1_000 && unit < units.count - 1 {
            value /= 1_000
            unit += 1
        }
        return unit == 0 ? "\(n) B" : String(format: "%.1f %@", value, units[unit])
    }
}
