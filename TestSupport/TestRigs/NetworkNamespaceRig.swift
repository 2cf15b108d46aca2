import Foundation
import Rigs

/// A test host of our own: a network namespace joined to this one by a veth pair, with
/// nothing but a default route out of it, so that removing that route cuts the host off
/// (connect fails at once with "network unreachable") and adding it back is a real
/// "the network returned" that the kernel announces over netlink. Addresses are from
/// 10.213.0.0/16 on that veth only; nothing leaves the machine. Needs root and `ip`.
public final class NetworkNamespaceRig: @unchecked Sendable {
    // Immutable after init.
    public let name: String
    /// The namespace's own address, and this side's (where a receiver listens).
    public let inside: String
    public let outside: String
    private let outerLink: String

    public init() throws {
        let tag = String(UInt32.random(in: 0 ..< 0xFFFF), radix: 16)
        let octet = Int.random(in: 1 ... 250)
        name = "ariata-test-\(tag)"
        outerLink = "ar\(tag)o"
        let innerLink = "ar\(tag)i"
        inside = "10.213.\(octet).2"
        outside = "10.213.\(octet).1"
        do {
            try Self.ip(["netns", "add", name])
            try Self.ip(["link", "add", outerLink, "type", "veth", "peer", "name", innerLink])
            try Self.ip(["link", "set", innerLink, "netns", name])
            try Self.ip(["addr", "add", "\(outside)/32", "dev", outerLink])
            try Self.ip(["link", "set", outerLink, "up"])
            try Self.ip(["route", "add", "\(inside)/32", "dev", outerLink])
            try Self.ip(["-n", name, "link", "set", "lo", "up"])
            try Self.ip(["-n", name, "addr", "add", "\(inside)/32", "dev", innerLink])
            try Self.ip(["-n", name, "link", "set", innerLink, "up"])
            innerLinkName = innerLink
            try addDefaultRoute()
        } catch {
            cleanUp()
            throw error
        }
    }

    private var innerLinkName = ""

    deinit { cleanUp() }

    public func removeDefaultRoute() throws {
        try Self.ip(["-n", name, "route", "del", "default"])
    }

    /// A device route without a gateway: the peer answers for every address.
    public func addDefaultRoute() throws {
        try Self.ip(["-n", name, "route", "add", "default", "dev", innerLinkName])
    }

    /// Arguments that run `command` inside the namespace: `ip netns exec NAME command...`.
    public func exec(_ command: [String]) throws -> (executable: String, arguments: [String]) {
        (try Self.ipPath(), ["netns", "exec", name] + command)
    }

    private func cleanUp() {
        _ = try? Self.ip(["link", "del", outerLink])
        _ = try? Self.ip(["netns", "del", name])
    }

    static func ipPath() throws -> String {
        guard let path = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw NotInstalled(program: "ip (Debian package iproute2)")
        }
        return path
    }

    @discardableResult
    static func ip(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try ipPath())
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw RigFailure("ip \(arguments.joined(separator: " ")) failed: \(message)")
        }
        return message
    }
}
