import Foundation
import XCTest

/// The tests that bind an iroh endpoint (the box's and the bridge's) run only inside a
/// network namespace whose one interface is loopback: the iroh library otherwise probes
/// the machine's gateways and public relays. scripts/test.sh runs them in one
/// (`unshare --net`); run anywhere else, they skip and say how to run them.
public enum LoopbackOnlyNamespace {
    /// The network interfaces of this process's namespace other than loopback, from
    /// /proc/self/net/dev (/sys/class/net shows the namespace /sys was mounted in, which
    /// `unshare --net` does not change).
    public static func otherInterfaces() -> [String] {
        guard let text = try? String(contentsOfFile: "/proc/self/net/dev", encoding: .utf8) else { return ["(no /proc/self/net/dev)"] }
        return text.split(separator: "\n").dropFirst(2).compactMap { line in
            let name = line.split(separator: ":", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            return name.isEmpty || name == "lo" ? nil : name
        }.sorted()
    }

    public static func requireInside() throws {
        let others = otherInterfaces()
        guard others.isEmpty else {
            throw XCTSkip("binds iroh endpoints: runs only in a network namespace with loopback alone (\(others.joined(separator: ", ")) here); scripts/test.sh runs it so, or: sudo unshare --net sh -c 'ip link set lo up && swift test --skip-build --filter \"Box\"'")
        }
    }
}
