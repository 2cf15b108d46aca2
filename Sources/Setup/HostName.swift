import Foundation

/// This machine's short host name: the default device name.
enum HostName {
    static func current() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "linux-device" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // "pi.lan" -> "pi": the domain says nothing about the device.
        let short = name.split(separator: ".").first.map(String.init) ?? name
        return short.isEmpty ? "linux-device" : short
    }
}
