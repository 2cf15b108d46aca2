import Foundation

/// JSON Lines: one object per line, in the contract's long form
/// (`{"timestamp":…,"metric_type":"heart_rate","value":72,"unit":"bpm"}`) or the wide form
/// (`{"ts":…,"hr":72,"steps":12}`).
public struct JSONLinesParser: HealthLineParser {
    public init() {}

    public mutating func parse(_ line: Substring) -> LineOutcome {
        if HealthLineParsers.isBlankOrComment(line) { return .ignored }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(line.utf8), options: [])
        } catch {
            return .malformed("not valid JSON")
        }
        guard let dictionary = object as? [String: Any] else { return .malformed("not a JSON object") }
        return HealthFieldMapper.outcome(dictionary.map { ($0.key, Self.fieldValue($0.value)) }.sorted { $0.0 < $1.0 })
    }

    static func fieldValue(_ value: Any) -> FieldValue {
        if value is NSNull { return .null }
        if let s = value as? String { return .text(s) }
        if let n = value as? NSNumber {
            // JSON true/false arrive as NSNumber too, with the C type `char`, which no
            // JSON number gets; they are never a sample's value.
            if n.objCType.pointee == CChar(UInt8(ascii: "c")) { return .other }
            return .number(n.doubleValue)
        }
        return .other
    }
}
