import AgentCore
import Foundation
import TestRigs
import XCTest

/// The daemon on a test host whose only way out is a default route: the route goes (an
/// outage, uploads back off), the route comes back (the kernel says so over netlink), and
/// the waiting records are sent at once instead of after the backoff.
final class NetworkReturnTests: XCTestCase {
    func testTheNetworksReturnSendsAtOnceInsteadOfWaitingOutTheBackoff() throws {
        let host: NetworkNamespaceRig
        do {
            host = try NetworkNamespaceRig()
        } catch {
            throw XCTSkip("cannot make a network namespace here (needs root and iproute2): \(error)")
        }
        let directory = try TemporaryDirectory("ariata-netns")
        let receiver = try ReceiverRig(logDirectory: directory.path, token: "netns-token", host: host.outside)
        let health = directory.file("health.jsonl")
        FileManager.default.createFile(atPath: health, contents: nil)
        let config = directory.file("agent.toml")
        try """
            [server]
            endpoint = "\(receiver.endpoint)"
            token = "netns-token"
            device_id = "netns-test"
            connect_timeout = 5
            [storage]
            database = "\(directory.file("agent.sqlite"))"
            [upload]
            interval = 5
            [daemon]
            check_interval = 2
            \(AgentCLI.healthOnly(source: "kind = \"file\"\npath = \"\(health)\"\nformat = \"jsonl\"", healthKeys: "commit_interval = 1"))
            """.write(toFile: config, atomically: true, encoding: .utf8)

        let command = try host.exec([try BuildProducts.executable("ariata-agent"), "run", "--config", config])
        let agent = try ChildProcess(command.executable, command.arguments, name: "agent", logDirectory: directory.path)
        defer { agent.stop(grace: 10) }

        func append(_ values: [Int]) throws {
            let now = Date()
            let lines = values.enumerated().map { i, v in
                "{\"timestamp\":\"\(RFC3339.string(from: now.addingTimeInterval(Double(i) - 10)))\",\"hr\":\(v)}\n"
            }.joined()
            let handle = try XCTUnwrap(FileHandle(forWritingAtPath: health))
            handle.seekToEndOfFile()
            handle.write(Data(lines.utf8))
            try handle.close()
        }

        try append([61, 62, 63])
        try waitUntil("the first samples at the receiver", timeout: 60) { try receiver.stats().stored(.health) == 3 }

        // The outage: the next cycle cannot connect and the stream backs off (24-30 s).
        try host.removeDefaultRoute()
        try append([64, 65, 66])
        var retryAt: Date?
        try waitUntil("an upload to fail and back off", timeout: 60) {
            retryAt = Self.lastRetryTime(in: agent.stderr())
            return retryAt != nil
        }
        let backoffEnds = try XCTUnwrap(retryAt)
        XCTAssertEqual(try receiver.stats().stored(.health), 3)

        // The network returns: the kernel announces the route, the backoff is forgotten.
        try host.addDefaultRoute()
        let returned = Date()
        try waitUntil("the waiting samples at the receiver", timeout: 60) { try receiver.stats().stored(.health) == 6 }
        let delivered = Date()
        XCTAssertLessThan(delivered, backoffEnds, "sent when the route came back, not when the backoff ended: \(agent.stderr())")
        XCTAssertTrue(agent.stderr().contains("a default route appeared: backoff reset, uploading now"), agent.stderr())
        XCTAssertEqual(try receiver.stats().duplicates, 0)
        print(String(format: "measured: network return to delivery %.2f s (the backoff would have waited %.1f s more)",
                     delivered.timeIntervalSince(returned), backoffEnds.timeIntervalSince(delivered)))
    }

    /// The time in the agent's last "…; retrying at <RFC 3339>" line.
    static func lastRetryTime(in log: String) -> Date? {
        guard let line = log.split(separator: "\n").last(where: { $0.contains("retrying at ") }),
              let range = line.range(of: "retrying at ") else { return nil }
        return RFC3339.date(from: String(line[range.upperBound...].prefix(24)))
    }
}
