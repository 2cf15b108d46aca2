import CQREncode
import Foundation

/// A QR code of a short text, made by libqrencode (error correction level M, 8-bit
/// mode, the smallest version that holds the text), and drawn for a terminal.
public struct QRCode: Sendable, Equatable {
    /// 1...40; the symbol is `4 * version + 17` modules on a side.
    public let version: Int
    public let size: Int
    /// Row by row, true for a dark module.
    public let modules: [Bool]

    /// Nil when libqrencode cannot encode the text (too long for a QR code, or no memory).
    public init?(text: String) {
        guard !text.isEmpty, let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        version = Int(code.pointee.version)
        size = width
        // libqrencode's bit 0 of each byte is the module's colour (1: dark).
        modules = (0..<(width * width)).map { code.pointee.data[$0] & 1 == 1 }
    }

    public func isDark(row: Int, column: Int) -> Bool {
        guard (0..<size).contains(row), (0..<size).contains(column) else { return false }
        return modules[row * size + column]
    }

    /// Light modules around the symbol: the standard's quiet zone is 4 modules wide.
    public static let quietZone = 4

    /// The code as lines of text, two module rows per line: the light modules are drawn
    /// with block characters (`█ ▀ ▄`) and the dark ones left blank, quiet zone included.
    /// `colours` (a terminal without NO_COLOR): each line is set white on black with ANSI
    /// escapes, so the code reads the same on a terminal with a light background (a
    /// scanner needs dark on light); without them it suits the usual dark background.
    public func terminalLines(colours: Bool) -> [String] {
        let quiet = Self.quietZone
        let span = size + 2 * quiet
        // Outside the symbol everything is light (the quiet zone, and the half row that
        // pads an odd height).
        func light(_ row: Int, _ column: Int) -> Bool { !isDark(row: row - quiet, column: column - quiet) }
        return stride(from: 0, to: span, by: 2).map { top in
            let cells = (0..<span).map { column -> Character in
                switch (light(top, column), light(top + 1, column)) {
                case (true, true): return "█"
                case (true, false): return "▀"
                case (false, true): return "▄"
                case (false, false): return " "
                }
            }
            let line = String(cells)
            return colours ? "\u{1B}[97;40m" + line + "\u{1B}[0m" : line
        }
    }
}
