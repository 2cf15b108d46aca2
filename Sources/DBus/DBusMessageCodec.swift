import CSystemd
import Foundation

/// Reads an sd-bus message's arguments into `DBusValue`s and appends them to one. Used on
/// the bus thread only (sd-bus messages are not shared between threads).
enum DBusMessageCodec {
    static func readAll(_ message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while true {
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            let more = sd_bus_message_peek_type(message, &type, &contents)
            if more < 0 { throw DBusError.system(code: more, while: "reading a message") }
            if more == 0 { return values }
            values.append(try readOne(message, type: type, contents: contents))
        }
    }

    private static func readOne(_ message: OpaquePointer, type: CChar, contents: UnsafePointer<CChar>?) throws(DBusError) -> DBusValue {
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "a"), UInt8(ascii: "v"), UInt8(ascii: "r"), UInt8(ascii: "e"):
            let inner = contents.map { String(cString: $0) } ?? ""
            try check(sd_bus_message_enter_container(message, type, contents), "entering a container")
            let items = try readAll(message)
            try check(sd_bus_message_exit_container(message), "leaving a container")
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "a"):
                return .array(element: inner, items)
            case UInt8(ascii: "v"):
                guard let only = items.first, items.count == 1 else { throw DBusError.malformed("a variant without one value") }
                return .variant(only)
            case UInt8(ascii: "r"):
                return .structure(items)
            default:
                guard items.count == 2 else { throw DBusError.malformed("a dictionary entry without key and value") }
                return .dictEntry(items[0], items[1])
            }
        default:
            return try readBasic(message, type: type)
        }
    }

    private static func readBasic(_ message: OpaquePointer, type: CChar) throws(DBusError) -> DBusValue {
        func read<T>(_ initial: T) throws(DBusError) -> T {
            var value = initial
            try check(withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(message, type, $0) }, "reading a value")
            return value
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "y"): return .byte(try read(UInt8(0)))
        case UInt8(ascii: "b"): return .bool(try read(Int32(0)) != 0)
        case UInt8(ascii: "n"): return .int16(try read(Int16(0)))
        case UInt8(ascii: "q"): return .uint16(try read(UInt16(0)))
        case UInt8(ascii: "i"): return .int32(try read(Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try read(UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try read(Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try read(UInt64(0)))
        case UInt8(ascii: "d"): return .double(try read(Double(0)))
        case UInt8(ascii: "h"):
            // The message owns its descriptor and closes it with itself: keep a copy.
            let fd = fcntl(try read(Int32(-1)), F_DUPFD_CLOEXEC, 3)
            guard fd >= 0 else { throw DBusError.system(code: -errno, while: "copying a passed file descriptor") }
            return .unixFD(fd)
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            let pointer = try read(UnsafePointer<CChar>?.none)
            let text = pointer.map { String(cString: $0) } ?? ""
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "s"): return .string(text)
            case UInt8(ascii: "o"): return .objectPath(text)
            default: return .signature(text)
            }
        default:
            throw DBusError.malformed("a value of unknown type '\(Character(UnicodeScalar(UInt8(bitPattern: type))))'")
        }
    }

    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        for value in values { try append(value, to: message) }
    }

    private static func append(_ value: DBusValue, to message: OpaquePointer) throws(DBusError) {
        func basic<T>(_ type: Character, _ raw: T) throws(DBusError) {
            var raw = raw
            let code = withUnsafePointer(to: &raw) { sd_bus_message_append_basic(message, CChar(type.asciiValue ?? 0), $0) }
            try check(code, "writing a value")
        }
        func text(_ type: Character, _ string: String) throws(DBusError) {
            let code = string.withCString { sd_bus_message_append_basic(message, CChar(type.asciiValue ?? 0), $0) }
            try check(code, "writing a string")
        }
        func container(_ type: Character, _ contents: String, _ items: [DBusValue]) throws(DBusError) {
            try check(contents.withCString { sd_bus_message_open_container(message, CChar(type.asciiValue ?? 0), $0) },
                      "opening a container")
            try append(items, to: message)
            try check(sd_bus_message_close_container(message), "closing a container")
        }
        switch value {
        case .byte(let v): try basic("y", v)
        case .bool(let v): try basic("b", Int32(v ? 1 : 0))
        case .int16(let v): try basic("n", v)
        case .uint16(let v): try basic("q", v)
        case .int32(let v): try basic("i", v)
        case .uint32(let v): try basic("u", v)
        case .int64(let v): try basic("x", v)
        case .uint64(let v): try basic("t", v)
        case .double(let v): try basic("d", v)
        case .unixFD(let v): try basic("h", v)
        case .string(let v): try text("s", v)
        case .objectPath(let v): try text("o", v)
        case .signature(let v): try text("g", v)
        case .variant(let inner): try container("v", inner.signature, [inner])
        case .array(let element, let items): try container("a", element, items)
        case .structure(let items): try container("r", items.map(\.signature).joined(), items)
        case .dictEntry(let key, let v): try container("e", key.signature + v.signature, [key, v])
        }
    }

    static func check(_ code: Int32, _ what: String) throws(DBusError) {
        if code < 0 { throw DBusError.system(code: code, while: what) }
    }

    /// The text of a message header field, nil when absent.
    static func header(_ read: (OpaquePointer) -> UnsafePointer<CChar>?, of message: OpaquePointer) -> String? {
        read(message).map { String(cString: $0) }
    }
}
