import Foundation

/// The fields of `status --json` that were renamed, written under their former names too
/// (deprecated, until a `schema_version` removes them: docs/operations.md, "status
/// --json"), so scripts written against an earlier version keep reading them. The one
/// place a rename of a status field is recorded; the code and the schema use the current
/// name.
enum StatusFormerNames {
    struct Alias {
        /// Where the object is: keys from the top, `*` for every element of an array.
        var path: [String]
        var current: String
        var former: String
    }

    static let aliases = [
        Alias(path: ["streams", "*"], current: "liveness", former: "health"),
        Alias(path: ["uploader"], current: "liveness", former: "health"),
        Alias(path: ["network"], current: "deferred_streams", former: "held_streams"),
    ]

    /// `json` (an encoded status report) with each alias's former key beside its current one.
    static func add(to json: Data, formatting: JSONEncoder.OutputFormatting) throws -> Data {
        var value = try JSONDecoder().decode(JSONValue.self, from: json)
        for alias in aliases {
            value.copy(alias.current, to: alias.former, at: alias.path[...])
        }
        // No key strategy: the keys are already the report's.
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        return try encoder.encode(value)
    }
}

/// Any JSON value, read and written again unchanged (whole numbers stay whole).
private enum JSONValue: Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    mutating func copy(_ key: String, to former: String, at path: ArraySlice<String>) {
        switch self {
        case .object(var fields):
            if let next = path.first {
                guard next != "*", var child = fields[next] else { return }
                child.copy(key, to: former, at: path.dropFirst())
                fields[next] = child
            } else if let value = fields[key] {
                fields[former] = value
            }
            self = .object(fields)
        case .array(var elements) where path.first == "*":
            for index in elements.indices { elements[index].copy(key, to: former, at: path.dropFirst()) }
            self = .array(elements)
        default:
            return
        }
    }
}
