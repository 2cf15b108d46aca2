import Foundation
import TestRigs
import XCTest

/// Sources/ariata-agent/hot-code.order still names the agent's functions
/// (docs/development.md, "The hot-code order"): scripts/check-hot-code.sh, the check the
/// package build runs on its release program, run here on the suite's debug build.
final class HotCodeOrderTests: XCTestCase {
    static let root = BenchCommandTests.root

    func check(order: String? = nil) throws -> (status: Int32?, output: String) {
        let dir = try TemporaryDirectory("hot-code")
        let program = try BuildProducts.executable("ariata-agent")
        let child = try ChildProcess("/bin/bash", ["\(Self.root)/scripts/check-hot-code.sh"]
                                     + (order.map { ["--order", $0] } ?? []) + ["--unoptimized", program],
                                     name: "check", logDirectory: dir.path)
        let status = child.wait(timeout: 120)
        return (status, child.stdout() + child.stderr())
    }

    func testTheOrderNamesTheAgentsFunctions() throws {
        let result = try check()
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains("ok: "), result.output)
    }

    /// The check fails on what it is for: a list in which a fifth of the agent's own
    /// functions were renamed since it was made.
    func testAStaleOrderFails() throws {
        let dir = try TemporaryDirectory("hot-code-stale")
        let text = try String(contentsOfFile: "\(Self.root)/Sources/ariata-agent/hot-code.order", encoding: .utf8)
        let modules = ["$s9AgentCore", "$s7Capture", "$s6Upload", "$s6Daemon", "$s5Setup", "$s12ariata_agent"]
        var index = 0
        let stale = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let module = modules.first(where: { line.hasPrefix($0) }) else { return String(line) }
            index += 1
            // The module's prefix + "5Stale" + the rest: still the module's, but no such function.
            return index % 5 == 0 ? module + "5Stale" + line.dropFirst(module.count) : String(line)
        }.joined(separator: "\n")
        XCTAssertGreaterThan(index, 100, "the order lists the agent's own functions")
        let path = dir.file("stale.order")
        try stale.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try check(order: path)
        XCTAssertEqual(result.status, 1, result.output)
        XCTAssertTrue(result.output.contains("regenerate it (scripts/hot-code.sh)"), result.output)
    }
}
