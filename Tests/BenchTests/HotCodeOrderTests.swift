import Foundation
import TestRigs
import XCTest

/// scripts/check-hot-code.sh, the check the package build runs on its release program, run
/// here on the suite's debug build (docs/releasing.md, "The hot-code order"). A rename of
/// the agent's functions makes link/hot-code.order stale, which costs memory, not
/// correctness: the check notes it, and fails on it only when asked (`--min-found`), as a
/// release does, so a rename never fails this suite.
final class HotCodeOrderTests: XCTestCase {
    static let root = BenchCommandTests.root

    func check(order: String? = nil, minFound: Int? = nil, release: Bool = false) throws -> (status: Int32?, output: String) {
        let dir = try TemporaryDirectory("hot-code")
        let program = try BuildProducts.executable("ariata-agent")
        let child = try ChildProcess("/bin/bash", ["\(Self.root)/scripts/check-hot-code.sh"]
                                     + (order.map { ["--order", $0] } ?? []) + (minFound.map { ["--min-found", "\($0)"] } ?? [])
                                     + (release ? [] : ["--unoptimized"]) + [program],
                                     name: "check", logDirectory: dir.path)
        let status = child.wait(timeout: 120)
        return (status, child.stdout() + child.stderr())
    }

    /// The list is read and its share found reported, whatever renames made it stale.
    func testTheCheckReportsTheShareOfTheOrderFound() throws {
        let result = try check()
        XCTAssertEqual(result.status, 0, result.output)
        let found = try XCTUnwrap(result.output.firstMatch(of: /ok: (\d+) of the (\d+) functions/), result.output)
        XCTAssertGreaterThan(Int(found.2) ?? 0, 100, "the order lists the agent's own functions: \(result.output)")
        XCTAssertGreaterThan(Int(found.1) ?? 0, 0, result.output)
    }

    /// A stale list is a note by default and a failure with `--min-found` (a release's
    /// check): a list in which a fifth of the agent's own functions were renamed since it
    /// was made.
    func testAStaleOrderIsANoteAndFailsARelease() throws {
        let dir = try TemporaryDirectory("hot-code-stale")
        let text = try String(contentsOfFile: "\(Self.root)/link/hot-code.order", encoding: .utf8)
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
        let noted = try check(order: path)
        XCTAssertEqual(noted.status, 0, noted.output)
        XCTAssertTrue(noted.output.contains("note: only "), noted.output)
        XCTAssertTrue(noted.output.contains("regenerate it before a release"), noted.output)
        let release = try check(order: path, minFound: 90)
        XCTAssertEqual(release.status, 1, release.output)
        XCTAssertTrue(release.output.contains("regenerate it (scripts/hot-code.sh)"), release.output)
    }

    /// The release path of the check runs to its layout checks: a debug program, whose
    /// link ignores the order, gets past the share (a note) and fails on the layout, with
    /// the reason, as a package build whose link ignored the list would.
    func testTheReleaseCheckRunsToTheLayoutAndNamesWhatIsWrong() throws {
        let result = try check(release: true)
        XCTAssertEqual(result.status, 1, result.output)
        XCTAssertTrue(result.output.contains("note: only "), result.output)
        XCTAssertTrue(result.output.contains("the release link did not use the ordering"), result.output)
    }
}
