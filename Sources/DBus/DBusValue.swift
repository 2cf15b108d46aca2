/// One D-Bus value as the wire carries it, typed by its signature. Messages are read whole
/// into these and written from them, so the code that speaks a service's interface never
/// touches sd-bus itself.
public indirect enum DBusValue: Sendable, Equatable, CustomStringConvertible {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A file descriptor passed with the message: a copy that belongs to the reader, who
    /// must close it (a logind inhibitor lock is one).
    case unixFD(Int32)
    case variant(DBusValue)
    /// `element` is the signature of one item, so that an empty array is still typed.
    case array(element: String, [DBusValue])
    case structure([DBusValue])
    case dictEntry(DBusValue, DBusValue)

    /// The value's D-Bus type signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element, _): "a" + element
        case .structure(let items): "(" + items.map(\.signature).joined() + ")"
        case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
        }
    }

    /// An `a{sv}` dictionary, as properties and options are passed.
    public static func dictionary(_ entries: [String: DBusValue]) -> DBusValue {
        .array(element: "{sv}", entries.sorted { $0.key < $1.key }.map { .dictEntry(.string($0.key), .variant($0.value)) })
    }

    public var description: String {
        switch self {
        case .byte(let v): "\(v)"
        case .bool(let v): "\(v)"
        case .int16(let v): "\(v)"
        case .uint16(let v): "\(v)"
        case .int32(let v): "\(v)"
        case .uint32(let v): "\(v)"
        case .int64(let v): "\(v)"
        case .uint64(let v): "\(v)"
        case .double(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .objectPath(let v): v
        case .signature(let v): "signature \(v)"
        case .unixFD(let v): "fd \(v)"
        case .variant(let v): "<\(v)>"
        case .array(_, let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .structure(let items): "(" + items.map(\.description).joined(separator: ", ") + ")"
        case .dictEntry(let key, let value): "\(key): \(value)"
        }
    }
}

/// Reading values without caring how the service typed a number or wrapped it in a
/// variant: a property's `u` and another version's `i` read the same.
extension DBusValue {
    /// The value inside any number of variants.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    public var string: String? {
        switch unwrapped {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    public var bool: Bool? {
        if case .bool(let b) = unwrapped { return b }
        return nil
    }

    /// Any numeric value as a Double.
    public var double: Double? {
        switch unwrapped {
        case .byte(let v): Double(v)
        case .int16(let v): Double(v)
        case .uint16(let v): Double(v)
        case .int32(let v): Double(v)
        case .uint32(let v): Double(v)
        case .int64(let v): Double(v)
        case .uint64(let v): Double(v)
        case .double(let v): v
        default: nil
        }
    }

    /// Any integer value that fits an Int.
    public var int: Int? {
        switch unwrapped {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): Int(exactly: v)
        default: nil
        }
    }

    /// An array's items.
    public var items: [DBusValue]? {
        if case .array(_, let items) = unwrapped { return items }
        return nil
    }

    /// An `ay` as bytes.
    public var bytes: [UInt8]? {
        items?.compactMap { item -> UInt8? in
            if case .byte(let b) = item { return b }
            return nil
        }
    }

    /// A dictionary with string keys (`a{sv}`, `a{ss}`, …), nil when this is not one.
    public var dictionary: [String: DBusValue]? {
        guard let items else { return nil }
        var out: [String: DBusValue] = [:]
        for item in items {
            guard case .dictEntry(let key, let value) = item, let name = key.string else { return nil }
            out[name] = value.unwrapped
        }
        return out
    }
}
