import Foundation
import TestRigs
import XCTest

/// docs/architecture.md is checked against the code, so that it stays true
/// (docs/development.md, "The architecture page"): every thread the agent starts is in its
/// threads table and every name there is started; every module's row lists exactly the
/// dependencies `Package.swift` gives it; every type, member and source file it names in
/// backticks exists; and it carries no measurements (those are docs/performance.md's).
final class ArchitecturePageTests: XCTestCase {
    static let root = Repository.root

    func page() throws -> String {
        try String(contentsOfFile: "\(Self.root)/docs/architecture.md", encoding: .utf8)
    }

    func testTheThreadsTableNamesEveryThreadTheAgentStarts() throws {
        let code = try ArchitecturePage.threadNames(sources: ArchitecturePage.sources(root: Self.root))
        XCTAssertTrue(code.contains("ariata-mic") && code.contains("ariata-health-"), "the scan finds threads: \(code)")
        let listed = ArchitecturePage.threadsInTable(try page())
        XCTAssertEqual(ArchitecturePage.threadMismatches(code: code, listed: listed), [])
    }

    func testEveryModuleRowListsItsDependenciesAsPackageSwiftHasThem() throws {
        let targets = try ArchitecturePage.targets(root: Self.root)
        XCTAssertGreaterThan(targets.count, 10, "dump-package read the manifest")
        XCTAssertEqual(ArchitecturePage.moduleMismatches(page: try page(), targets: targets), [])
    }

    func testEveryTypeMemberAndFileNamedExists() throws {
        let sources = try ArchitecturePage.sources(root: Self.root)
        let targets = try ArchitecturePage.targets(root: Self.root, all: true)
        var checked = 0
        let missing = ArchitecturePage.missingNames(page: try page(), sources: sources, root: Self.root,
                                                    modules: Set(targets.keys), checked: &checked)
        XCTAssertGreaterThan(checked, 60, "the check found too few names to be reading the page")
        XCTAssertEqual(missing, [])
    }

    func testThePageCarriesNoMeasurements() throws {
        XCTAssertEqual(ArchitecturePage.measurements(in: try page()), [])
    }

    /// The checks fail on what they are for, on a page and code of the test's own.
    func testTheChecksFindWhatIsWrong() throws {
        let sources = [
            "Sources/A/Worker.swift": """
                struct Worker { func run() {} }
                let t = try NamedThread(name: "ariata-work") { _ in }
                let u = try NamedThread(name: "ariata-item-\\(index)") { _ in }
                let c = try DBusConnection(.system, threadName: "ariata-bus")
                """,
        ]
        let code = ArchitecturePage.threadNames(sources: sources)
        XCTAssertEqual(code, ["ariata-work", "ariata-item-", "ariata-bus"])
        let page = """
            ## Modules

            | module | holds | depends on |
            | --- | --- | --- |
            | `A` | `Worker` | `Platform`, `Gone` |

            ## Threads

            | thread | what | wakes |
            | --- | --- | --- |
            | `ariata-work` | x | y |
            | `ariata-item-1`, `-2` | x | y |
            | `ariata-old` | x | y |

            `Worker.run`, `Worker.walk`, `Missing`, `Sources/A/Worker.swift`, `Sources/A/Nowhere.swift`.
            It takes 12 MB and 3.5 ms, 40 % of it.
            """
        XCTAssertEqual(ArchitecturePage.threadMismatches(code: code, listed: ArchitecturePage.threadsInTable(page)),
                       ["thread ariata-bus is started in the code but not in the threads table",
                        "thread ariata-old is in the threads table but no code starts it"])
        XCTAssertEqual(ArchitecturePage.moduleMismatches(page: page, targets: ["A": ["Platform", "Logging"], "B": []]),
                       ["module A: the page lists Gone, which Package.swift does not give it",
                        "module A: Package.swift gives it Logging, which the page does not list",
                        "module B: no row in the modules table"])
        var checked = 0
        XCTAssertEqual(ArchitecturePage.missingNames(page: page, sources: sources, root: "/nonexistent", modules: ["A", "B", "Platform", "Gone"],
                                                     checked: &checked),
                       ["Worker.walk: no such member", "Missing: no such type", "Sources/A/Nowhere.swift: no such file"])
        XCTAssertEqual(ArchitecturePage.measurements(in: page), ["12 MB", "3.5 ms", "40 %"])
    }
}

/// What `ArchitecturePageTests` reads of the page and of the code.
enum ArchitecturePage {
    /// Swift files of the agent's modules, test support and tests, by path from the root.
    static func sources(root: String) throws -> [String: String] {
        var files: [String: String] = [:]
        for top in ["Sources", "TestSupport", "Tests"] {
            guard let walker = FileManager.default.enumerator(atPath: "\(root)/\(top)") else { continue }
            for case let path as String in walker where path.hasSuffix(".swift") {
                // Generated bindings: not the agent's code.
                if top == "Sources", path.hasPrefix("Iroh/") { continue }
                files["\(top)/\(path)"] = try String(contentsOfFile: "\(root)/\(top)/\(path)", encoding: .utf8)
            }
        }
        return files
    }

    /// Thread names the code gives `NamedThread` and `DBusConnection`; a name built with an
    /// interpolated number is kept as its prefix ("ariata-health-").
    static func threadNames(sources: [String: String]) -> [String] {
        let pattern = /(?:NamedThread\(name: |NamedThread\.run\(name: |threadName: )"(ariata-[a-z0-9-]*)(\\\()?/
        var names: [String] = []
        for path in sources.keys.sorted() where path.hasPrefix("Sources/") && !path.contains("ariata-bench/") {
            for match in sources[path, default: ""].matches(of: pattern) {
                let name = String(match.1)
                if !names.contains(name) { names.append(name) }
            }
        }
        // A name built by a function (`threadName(index)`): its literal prefix.
        for path in sources.keys.sorted() where path.hasPrefix("Sources/") {
            for match in sources[path, default: ""].matches(of: /"(ariata-[a-z]+-)\\\(/) {
                let name = String(match.1)
                if !names.contains(name) { names.append(name) }
            }
        }
        return names
    }

    /// The first column's `ariata-…` names of the table under "## Threads".
    static func threadsInTable(_ page: String) -> [String] {
        rows(of: section("Threads", in: page)).flatMap { cells in
            cells.first.map(backticked)?.filter { $0.hasPrefix("ariata-") } ?? []
        }
    }

    static func threadMismatches(code: [String], listed: [String]) -> [String] {
        func covered(_ name: String, by others: [String]) -> Bool {
            others.contains { other in
                other == name || (name.hasSuffix("-") && other.hasPrefix(name) && other.dropFirst(name.count).allSatisfy(\.isNumber))
                    || (other.hasSuffix("-") && name.hasPrefix(other) && name.dropFirst(other.count).allSatisfy(\.isNumber))
            }
        }
        return code.filter { !covered($0, by: listed) }.map { "thread \($0) is started in the code but not in the threads table" }
            + listed.filter { !covered($0, by: code) }.map { "thread \($0) is in the threads table but no code starts it" }
    }

    /// Each non-test, non-system target's dependencies (targets and products), from `swift
    /// package dump-package`; with `all`, every target, with or without its dependencies.
    static func targets(root: String, all: Bool = false) throws -> [String: Set<String>] {
        let scratch = try TemporaryDirectory("architecture-dump")
        let child = try ChildProcess("swift", ["package", "--package-path", root, "--scratch-path", scratch.path, "dump-package"],
                                     name: "dump-package", logDirectory: scratch.path)
        guard child.wait(timeout: 120) == 0 else { throw DumpFailed(output: child.stderr()) }
        let manifest = try JSONSerialization.jsonObject(with: Data(child.stdout().utf8)) as? [String: Any]
        var targets: [String: Set<String>] = [:]
        for target in manifest?["targets"] as? [[String: Any]] ?? [] {
            guard let name = target["name"] as? String, let type = target["type"] as? String,
                  all || (type != "test" && type != "system") else { continue }
            var dependencies: Set<String> = []
            for dependency in target["dependencies"] as? [[String: [Any]]] ?? [] {
                if let first = dependency.values.first?.first as? String { dependencies.insert(first) }
            }
            targets[name] = dependencies
        }
        return targets
    }

    struct DumpFailed: Error { var output: String }

    /// Rows of the table under "## Modules": the first column's module, the last column's dependencies.
    static func moduleMismatches(page: String, targets: [String: Set<String>]) -> [String] {
        var rowsByModule: [String: Set<String>] = [:]
        for cells in rows(of: section("Modules", in: page)) where cells.count >= 3 {
            guard let module = backticked(cells[0]).first else { continue }
            rowsByModule[module] = Set(backticked(cells[cells.count - 1]))
        }
        var problems: [String] = []
        for (module, dependencies) in targets.sorted(by: { $0.key < $1.key }) {
            guard let listed = rowsByModule[module] else {
                problems.append("module \(module): no row in the modules table")
                continue
            }
            problems += listed.subtracting(dependencies).sorted()
                .map { "module \(module): the page lists \($0), which Package.swift does not give it" }
            problems += dependencies.subtracting(listed).sorted()
                .map { "module \(module): Package.swift gives it \($0), which the page does not list" }
        }
        return problems
    }

    /// Names the code does not have: `Type`, `Type.member` and `path/File.swift` in backticks.
    static func missingNames(page: String, sources: [String: String], root: String, modules: Set<String>,
                             checked: inout Int) -> [String] {
        let declared = Declarations(sources: sources)
        var missing: [String] = []
        var seen: Set<String> = []
        for name in backticked(withoutCodeBlocks(page)) where !seen.contains(name) {
            seen.insert(name)
            if name.hasSuffix(".swift") {
                checked += 1
                let exists = sources.keys.contains { $0 == name || $0.hasSuffix("/\(name)") }
                    || FileManager.default.fileExists(atPath: "\(root)/\(name)")
                if !exists { missing.append("\(name): no such file") }
                continue
            }
            guard let match = name.wholeMatch(of: /([A-Z][A-Za-z0-9]+)(?:\.([a-z][A-Za-z0-9]*))?(?:\(.*\))?/) else { continue }
            let type = String(match.1)
            if modules.contains(type) || externalNames.contains(type) { continue }
            checked += 1
            guard declared.types.contains(type) else {
                missing.append("\(type): no such type")
                continue
            }
            if let member = match.2.map(String.init), !declared.members.contains(member) {
                missing.append("\(name): no such member")
            }
        }
        return missing
    }

    /// The names the code declares: the word after `struct`, `class`, `enum`, `protocol`,
    /// `actor` or `typealias` (types) and after `func`, `var`, `let`, `case` or `init`
    /// (members), with only white space between. Read in one pass over each file's words,
    /// since searching all of the code once per name on the page took most of a minute.
    struct Declarations {
        var types: Set<String> = []
        var members: Set<String> = []

        static let typeKeywords: Set<String> = ["struct", "class", "enum", "protocol", "actor", "typealias"]
        static let memberKeywords: Set<String> = ["func", "var", "let", "case", "init"]

        init(sources: [String: String]) {
            for text in sources.values {
                var previous: String?
                for (word, spaceBefore) in Self.words(of: text) {
                    if let previous, spaceBefore {
                        if Self.typeKeywords.contains(previous) { types.insert(word) }
                        if Self.memberKeywords.contains(previous) { members.insert(word) }
                    }
                    previous = word
                }
            }
        }

        /// The text's words (letters, digits, `_`, and any non-ASCII byte), each with whether
        /// only white space (at least one character of it) stands between it and the word before.
        static func words(of text: String) -> [(String, Bool)] {
            let bytes = Array(text.utf8)
            var words: [(String, Bool)] = []
            var index = 0
            var gapStart = 0
            func isWord(_ byte: UInt8) -> Bool {
                byte >= 0x80 || byte == UInt8(ascii: "_") || (byte >= 0x30 && byte <= 0x39)
                    || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
            }
            while index < bytes.count {
                guard isWord(bytes[index]) else { index += 1; continue }
                let start = index
                while index < bytes.count, isWord(bytes[index]) { index += 1 }
                let gap = bytes[gapStart..<start]
                let spaceOnly = !gap.isEmpty && gap.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
                words.append((String(decoding: bytes[start..<index], as: UTF8.self), spaceOnly))
                gapStart = index
            }
            return words
        }
    }

    /// Names the page uses that are not the agent's: its dependencies' and the system's.
    static let externalNames: Set<String> = [
        "DatabaseQueue", "DatabasePool",                    // GRDB
        "EmbeddedEventLoop",                                // swift-nio, as the model of VirtualScheduler
        "DispatchWallTime", "Mutex", "Task", "Thread", "JSONSerialization", // Dispatch, Synchronization, Foundation
        "Metered", "PrepareForSleep",                       // NetworkManager's property, logind's signal
        "CLOCK_MONOTONIC", "WATCHDOG", "MADV_DONTNEED", "EINTR",
        "ArgumentParser", "Logging", "TOMLKit", "GRDB", "ServiceLifecycle", "UnixSignals",
    ]

    /// Sizes, durations below a second, shares and factors: what a measurement looks like.
    static func measurements(in page: String) -> [String] {
        page.matches(of: /\d[\d,]*(?:\.\d+)? ?(?:[KMG]i?B|kB|ms|µs|%|×)(?![A-Za-z])/).map { String($0.0) }
    }

    static func section(_ title: String, in page: String) -> String {
        let lines = page.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { $0.hasPrefix("## ") && $0.dropFirst(3).hasPrefix(title) }) else { return "" }
        let end = lines[(start + 1)...].firstIndex { $0.hasPrefix("## ") } ?? lines.endIndex
        return lines[(start + 1)..<end].joined(separator: "\n")
    }

    static func rows(of text: String) -> [[String]] {
        text.components(separatedBy: "\n").filter { $0.hasPrefix("|") && !$0.contains("---") }.dropFirst().map { line in
            line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    static func backticked(_ text: String) -> [String] {
        text.matches(of: /`([^`\n]+)`/).map { String($0.1) }
    }

    static func withoutCodeBlocks(_ page: String) -> String {
        var inBlock = false
        return page.components(separatedBy: "\n").filter { line in
            if line.hasPrefix("```") { inBlock.toggle(); return false }
            return !inBlock
        }.joined(separator: "\n")
    }
}
