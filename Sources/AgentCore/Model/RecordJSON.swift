import Foundation

/// The one writer of a record's JSON object: keys sorted by their UTF-8 bytes, slashes not
/// escaped, whole numbers without a fraction, other numbers in Swift's shortest form that
/// reads back to the same value.
///
/// Not JSONSerialization: on Linux its `.sortedKeys` compares keys through an `en_US_POSIX`
/// Locale, which loads ICU's locale and calendar data (about 1 MB of the program's
/// resident memory for a daemon that otherwise never touches ICU), and it boxes every
/// value. Records hold strings, integers, finite numbers, booleans and nested objects only.
public enum RecordJSON {
    /// A value the writer cannot put in a record.
    public struct Unsupported: Error, CustomStringConvertible {
        public var key: String
        public var value: String
        public var description: String {
            "record field \(key): \(value) cannot be written as JSON (strings, integers, finite numbers, booleans and objects only)"
        }
    }

    public static func data(_ object: [String: any Sendable]) throws -> Data {
        var out = ""
        out.reserveCapacity(256)
        try appendObject(object, to: &out)
        return Data(out.utf8)
    }

    static func appendObject(_ object: [String: any Sendable], to out: inout String) throws {
        out += "{"
        var first = true
        for (key, value) in object.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            if !first { out += "," }
            first = false
            appendString(key, to: &out)
            out += ":"
            try appendValue(value, key: key, to: &out)
        }
        out += "}"
    }

    static func appendValue(_ value: any Sendable, key: String, to out: inout String) throws {
        switch value {
        case let text as String: appendString(text, to: &out)
        case let flag as Bool: out += flag ? "true" : "false"
        case let integer as Int: out += String(integer)
        case let integer as Int64: out += String(integer)
        case let integer as Int32: out += String(integer)
        case let integer as UInt32: out += String(integer)
        case let number as Double:
            guard number.isFinite else { throw Unsupported(key: key, value: "\(number)") }
            out += Self.number(number)
        case let number as Float:
            guard number.isFinite else { throw Unsupported(key: key, value: "\(number)") }
            out += Self.number(Double(number))
        case let nested as [String: any Sendable]: try appendObject(nested, to: &out)
        default: throw Unsupported(key: key, value: String(describing: type(of: value)))
        }
    }

    /// Whole values without a fraction ("60", as JSONSerialization writes them), others in
    /// Swift's shortest round-trip form ("37.7749", "1e-07").
    public static func number(_ value: Double) -> String {
        if value == value.rounded(), value.magnitude < 1e15 { return String(Int64(value)) }
        return value.description
    }

    /// A JSON string: quotes, backslashes and control characters escaped, nothing else.
    public static func appendString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
