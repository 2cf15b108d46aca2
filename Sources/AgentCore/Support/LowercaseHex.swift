extension Sequence<UInt8> {
    /// Two lowercase hex digits per byte ("%02x" each), without Foundation's formatting code,
    /// which the daemon otherwise does not run (docs/decisions/0005-start-up-page-drop.md).
    public var lowercaseHex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
