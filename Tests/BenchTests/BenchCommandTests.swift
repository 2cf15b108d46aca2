@testable import ariata_bench
import ArgumentParser
import Foundation
import TestRigs
import XCTest

/// `ariata-bench` as its users run it (docs/development.md, Benchmarks): every command the
/// documentation quotes still parses, bad values are refused with the option named, the
/// help lists every benchmark, and a short benchmark runs to its figure.
final class BenchCommandTests: XCTestCase {
    static let root = Repository.root

    /// Every `ariata-bench …` command in the docs, the README and the scripts, as written
    /// (optional parts `[…]` included, placeholders such as `M` or `"$MINUTES"` given a
    /// value): docs/performance.md's figures are quoted with these commands.
    func testEveryDocumentedCommandParses() throws {
        var files = ["README.md", "scripts/hot-code.sh"]
        let docs = Self.root + "/docs"
        for case let name as String in FileManager.default.enumerator(atPath: docs)! where name.hasSuffix(".md") {
            files.append("docs/" + name)
        }
        var commands: [[String]] = []
        for file in files {
            let text = try String(contentsOfFile: Self.root + "/" + file, encoding: .utf8)
            commands += Self.benchCommands(in: text)
        }
        XCTAssertGreaterThan(commands.count, 10, "the scan found too few commands to be reading the pages")
        XCTAssertTrue(commands.contains(["footprint", "--warm-up", "14", "--minutes", "8", "--dir", "/mnt/sd", "--tls"]), "\(commands)")
        for arguments in commands {
            XCTAssertNoThrow(try AriataBench.parseAsRoot(arguments), "ariata-bench \(arguments.joined(separator: " "))")
        }
    }

    /// The arguments after `ariata-bench` on each line that runs it, up to the end of the
    /// command (a backquote, a pipe, a parenthesis, a `#` comment, a redirection).
    static func benchCommands(in text: String) -> [[String]] {
        var found: [[String]] = []
        for line in text.split(separator: "\n") {
            var rest = Substring(line)
            while let range = rest.range(of: "ariata-bench") {
                // `ariata-bench …`, or a quoted path to it: `"$WORK/ariata-bench" …`.
                var after = rest[range.upperBound...]
                if after.hasPrefix("\"") { after = after.dropFirst() }
                guard after.hasPrefix(" ") else { rest = after; continue }
                let end = after.firstIndex { "`|)#<>".contains($0) } ?? after.endIndex
                rest = after[end...]
                let words = after[..<end].replacingOccurrences(of: "[", with: " ").replacingOccurrences(of: "]", with: " ")
                    .split(separator: " ").map(String.init)
                guard let first = words.first, first.first?.isLowercase == true else { continue }
                // A placeholder value (D, M, N, "$MINUTES"): any valid value does.
                found.append(words.map { word in
                    word.allSatisfy(\.isUppercase) || word.hasPrefix("\"$") ? (word == "D" ? "/tmp" : "1") : word
                })
            }
        }
        return found
    }

    func testTheCheckFindsCommandsAndPlaceholders() {
        XCTAssertEqual(Self.benchCommands(in: "`ariata-bench footprint --minutes 10 [--dir D] [--tls [--ca-bundle]]` and more"),
                       [["footprint", "--minutes", "10", "--dir", "/tmp", "--tls", "--ca-bundle"]])
        XCTAssertEqual(Self.benchCommands(in: "\"$WORK/ariata-bench\" footprint --minutes \"$MINUTES\" | grep x"),
                       [["footprint", "--minutes", "1"]])
        XCTAssertThrowsError(try AriataBench.parseAsRoot(["footprint", "--warmup", "14"]), "a misspelt option is refused")
    }

    func testBadValuesAreRefusedWithTheOptionNamed() throws {
        let bench = try BuildProducts.executable("ariata-bench")
        let cases: [([String], [String])] = [
            (["footprint", "--minutes", "1.5"], ["'1.5'", "--minutes"]),
            (["metrics", "--ticks", "0"], ["--ticks", "positive"]),
            (["footprint", "--ca-bundle"], ["--ca-bundle", "--tls"]),
            (["upload", "--records", "-3"], ["--records"]),
            (["silence", "--quiet-percent", "120"], ["--quiet-percent", "0 to 100"]),
            (["nonesuch"], ["nonesuch"]),
        ]
        let dir = try TemporaryDirectory("bench-usage")
        for (arguments, words) in cases {
            let child = try ChildProcess(bench, arguments, name: "bench", logDirectory: dir.path)
            XCTAssertEqual(child.wait(timeout: 30), 64, "\(arguments): a usage error is exit status 64 (EX_USAGE)")
            for word in words {
                XCTAssertTrue(child.stderr().contains(word), "\(arguments): \(child.stderr())")
            }
        }
    }

    func testHelpExplainsEveryBenchmark() throws {
        let bench = try BuildProducts.executable("ariata-bench")
        let dir = try TemporaryDirectory("bench-help")
        let help = try ChildProcess(bench, ["--help"], name: "help", logDirectory: dir.path)
        XCTAssertEqual(help.wait(timeout: 30), 0)
        for name in ["queue", "upload", "location", "audio", "silence", "encode", "journal", "health", "export", "metrics", "power", "footprint"] {
            XCTAssertTrue(help.stdout().contains("  \(name) "), "\(name) in:\n\(help.stdout())")
        }
        let footprint = try ChildProcess(bench, ["footprint", "--help"], name: "footprint-help", logDirectory: dir.path)
        XCTAssertEqual(footprint.wait(timeout: 30), 0)
        for option in ["--minutes", "--warm-up", "--upload-interval", "--complexity", "--health-every", "--sync-seconds",
                       "--dir", "--shared-libraries", "--tls", "--ca-bundle", "drain"] {
            XCTAssertTrue(footprint.stdout().contains(option), "\(option) in:\n\(footprint.stdout())")
        }
    }

    /// A real run of a short benchmark, to its printed figure.
    func testTheMetricsBenchmarkRunsToItsFigure() throws {
        let bench = try BuildProducts.executable("ariata-bench")
        let dir = try TemporaryDirectory("bench-metrics")
        let child = try ChildProcess(bench, ["metrics", "--ticks", "2"], name: "metrics", logDirectory: dir.path)
        XCTAssertEqual(child.wait(timeout: 120), 0, child.stderr())
        XCTAssertTrue(child.stdout().contains("measured: metrics textfile write:"), child.stdout())
    }
}
