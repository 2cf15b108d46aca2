import Foundation
import Rigs

/// Reads back a QR code a command drew in a terminal with half-block characters (two
/// module rows per character: `█` both light, `▀` top light, `▄` bottom light, blank both
/// dark), as a person's phone would: the grid of modules, and its text decoded by
/// `zbarimg` (Debian's zbar-tools) from an image drawn from that grid.
public struct TerminalQRReader {
    /// Every module of the drawing, quiet zone included, row by row; true for light.
    public let light: [[Bool]]

    /// Reads the first run of consecutive lines made of block characters only (ANSI
    /// colour escapes and indentation ignored); nil when there is none.
    public init?(screen: String) {
        var rows: [[Bool]] = []
        // A terminal's lines end in "\r\n", one Character in Swift: split on any newline.
        for raw in screen.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = Self.strippingEscapes(String(raw)).trimmingCharacters(in: .whitespaces)
            let isCode = !line.isEmpty && line.contains("█") && line.allSatisfy { "█▀▄ ".contains($0) }
            guard isCode else {
                if !rows.isEmpty { break }
                continue
            }
            // Trimming took the blank cells at the ends: dark modules cannot be there (the
            // quiet zone is light), so nothing of the code is lost.
            rows.append(line.map { "█▀".contains($0) })
            rows.append(line.map { "█▄".contains($0) })
        }
        guard !rows.isEmpty, rows.allSatisfy({ $0.count == rows[0].count }) else { return nil }
        light = rows
    }

    static func strippingEscapes(_ text: String) -> String {
        text.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
    }

    /// The symbol without its quiet zone: the smallest square holding every dark module.
    public var symbol: [[Bool]] {
        let darkRows = light.indices.filter { light[$0].contains(false) }
        let darkColumns = light[0].indices.filter { column in light.contains { !$0[column] } }
        guard let top = darkRows.first, let bottom = darkRows.last,
              let left = darkColumns.first, let right = darkColumns.last else { return [] }
        return light[top...bottom].map { Array($0[left...right]) }
    }

    /// The light modules around the symbol, on its narrowest side.
    public var quietZone: Int {
        let darkRows = light.indices.filter { light[$0].contains(false) }
        let darkColumns = light[0].indices.filter { column in light.contains { !$0[column] } }
        guard let top = darkRows.first, let bottom = darkRows.last,
              let left = darkColumns.first, let right = darkColumns.last else { return 0 }
        // The last line's bottom half pads an odd height: not part of the zone proper.
        return min(top, light.count - 1 - bottom - (light.count % 2 == 0 ? 1 : 0), left, light[0].count - 1 - right)
    }

    /// True when the 7×7 finder pattern (dark ring, light ring, dark 3×3 centre) is at
    /// row `row`, column `column` of the symbol.
    public func hasFinderPattern(row: Int, column: Int) -> Bool {
        let symbol = symbol
        guard row + 7 <= symbol.count, column + 7 <= symbol.count else { return false }
        for r in 0..<7 {
            for c in 0..<7 {
                let ring = max(abs(r - 3), abs(c - 3))
                let shouldBeDark = ring != 2
                if symbol[row + r][column + c] == shouldBeDark { return false }
            }
        }
        return true
    }

    /// The text `zbarimg` reads from a PBM image of the grid (8 pixels a module), nil
    /// when it reads nothing. Throws `NotInstalled` without zbarimg.
    public func decoded(directory: String) throws -> String? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/zbarimg") else { throw NotInstalled(program: "zbarimg (zbar-tools)") }
        let scale = 8
        var image = "P1\n\(light[0].count * scale) \(light.count * scale)\n"
        for row in light {
            let line = row.flatMap { Array(repeating: $0 ? "0" : "1", count: scale) }.joined(separator: " ")
            for _ in 0..<scale { image += line + "\n" }
        }
        let path = "\(directory)/qr-\(UUID().uuidString.prefix(8)).pbm"
        try image.write(toFile: path, atomically: true, encoding: .ascii)
        let zbar = try ChildProcess("/usr/bin/zbarimg", ["-q", "--raw", path], name: "zbarimg", logDirectory: directory)
        guard zbar.wait(timeout: 30) == 0 else { return nil }
        return zbar.stdout().trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
