import Foundation

/// JSON Lines: one object per line, in the contract's long form
/// (`{"timestamp":…,"metric_type":"heart_rate","value":72,"unit":"bpm"}`) or the wide form
/// (`{"ts":…,"hr":72,"steps":12}`).
///
/// Parsed with `JSONDecoder` (FoundationEssentials), which the daemon runs anyway, not
/// `JSONSerialization`: its parser, `NSNumber` and the bridging of its values would stay in
/// the daemon's resident set for each sample (docs/decisions/0005-start-up-page-drop.md).
public struct JSONLinesParser: HealthLineParser {
    public init() {}

    public mutating func parse(_ line: Substring) -> LineOutcome {
        if HealthLineParsers.isBlankOrComment(line) { return .ignored }
        let value: JSONLineValue
        do {
            value = try JSONDecoder().decode(JSONLineValue.self, from: Data(line.utf8))
        } catch {
            return .malformed("not valid JSON")
        }
        guard case .object(let fields) = value else { return .malformed("not a JSON object") }
        return HealthFieldMapper.outcome(fields.map { ($0.key, $0.value.fieldValue) }.sorted { $0.0 < $1.0 })
    }
}

/// One JSON value of a line, as far as a health sample cares: JSON's true and false are
/// never a sample's value, nor are arrays and objects inside the line's object.
enum JSONLineValue: Decodable {
    case null
    case text(String)
    case number(Double)
    case object([String: JSONLineValue])
    case other

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if (try? container.decode(Bool.self)) != nil {
            self = .other
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .text(text)
        } else if let object = try? container.decode([String: JSONLineValue].self) {
            self = .object(object)
        } else {
            self = .other
        }
    }

    var fieldValue: FieldValue {
        switch self {
        case .null: .null
        case .text(let text): .text(text)
        case .number(let number): .number(number)
        case .object, .other: .other
        }
    }
}
