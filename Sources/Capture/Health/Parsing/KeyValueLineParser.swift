/// `key=value` pairs separated by spaces, commas or semicolons
/// (`ts=2026-11-22T10:05:00Z hr=72 spo2=97`), values optionally in double quotes; the
/// keys are the JSON field names. Serial devices often speak this.
public struct KeyValueLineParser: HealthLineParser {
    public init() {}

    public mutating func parse(_ line: Substring) -> LineOutcome {
        if HealthLineParsers.isBlankOrComment(line) { return .ignored }
        var fields: [(String, FieldValue)] = []
        let bytes = Array(line.utf8)
        var i = 0
        func isSeparator(_ c: UInt8) -> Bool { c == 32 || c == 9 || c == 44 || c == 59 || c == 13 }
        while i < bytes.count {
            while i < bytes.count, isSeparator(bytes[i]) { i += 1 }
            guard i < bytes.count else { break }
            let keyStart = i
            while i < bytes.count, bytes[i] != 61, !isSeparator(bytes[i]) { i += 1 }
            guard i < bytes.count, bytes[i] == 61, i > keyStart else {
                return .malformed("expected key=value at column \(keyStart + 1)")
            }
            let key = String(decoding: bytes[keyStart..<i], as: UTF8.self)
            i += 1
            var value: [UInt8] = []
            if i < bytes.count, bytes[i] == 34 {
                i += 1
                var closed = false
                while i < bytes.count {
                    if bytes[i] == 34 { closed = true; i += 1; break }
                    value.append(bytes[i])
                    i += 1
                }
                guard closed else { return .malformed("unclosed quote in \(key)") }
            } else {
                while i < bytes.count, !isSeparator(bytes[i]) {
                    value.append(bytes[i])
                    i += 1
                }
            }
            let text = String(decoding: value, as: UTF8.self)
            fields.append((key, text.isEmpty ? .null : .text(text)))
        }
        if fields.isEmpty { return .ignored }
        return HealthFieldMapper.outcome(fields)
    }
}
