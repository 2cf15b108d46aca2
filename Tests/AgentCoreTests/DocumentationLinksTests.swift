import Foundation
import TestRigs
import XCTest

/// Every relative link in README.md, CHANGELOG.md and docs/**/*.md leads somewhere: the
/// file exists, and a `#anchor` names a heading of its target (GitHub's slugs). Every
/// `docs/<page>.md` that a comment in the code cites exists. See docs/development.md.
final class DocumentationLinksTests: XCTestCase {
    static let root = Repository.root

    func testEveryRelativeLinkAndAnchorResolves() throws {
        let pages = try DocumentationLinks.pages(root: Self.root)
        XCTAssertTrue(pages.contains("README.md"), pages.description)
        XCTAssertTrue(pages.contains("CHANGELOG.md"), pages.description)
        XCTAssertTrue(pages.contains("docs/queue.md"), pages.description)
        var checked = 0
        let broken = try DocumentationLinks.brokenLinks(root: Self.root, pages: pages, checked: &checked)
        XCTAssertGreaterThan(checked, 100, "the check found too few links to be reading the pages")
        XCTAssertEqual(broken, [], "broken links:\n" + broken.joined(separator: "\n"))
    }

    func testEveryDocsPageCitedFromTheCodeExists() throws {
        var cited = 0
        let missing = try DocumentationLinks.missingCitedPages(root: Self.root, cited: &cited)
        XCTAssertGreaterThan(cited, 10, "the check found too few citations to be reading the code")
        XCTAssertEqual(missing, [], "cited from the code but missing:\n" + missing.joined(separator: "\n"))
    }

    func testSlugsAreGitHubs() {
        XCTAssertEqual(DocumentationLinks.slug("The audio journal"), "the-audio-journal")
        XCTAssertEqual(DocumentationLinks.slug("`status --json`"), "status---json")
        XCTAssertEqual(DocumentationLinks.slug("Microphone (ALSA, Opus)"), "microphone-alsa-opus")
        XCTAssertEqual(DocumentationLinks.slug("File sources: exactly once"), "file-sources-exactly-once")
        XCTAssertEqual(DocumentationLinks.slug("0001: One SQLite connection"), "0001-one-sqlite-connection")
        XCTAssertEqual(DocumentationLinks.slug("snake_case stays"), "snake_case-stays")
        XCTAssertEqual(DocumentationLinks.anchors(in: "# A\n## A\n```\n# not a heading\n```\n### B!\n"),
                       ["a", "a-1", "b"])
    }

    /// The check itself fails on what it is for: a missing file, a missing anchor in
    /// another page and in the same page; a link inside code is not a link.
    func testTheCheckFindsBrokenLinks() throws {
        let dir = NSTemporaryDirectory() + "doc-links-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/docs", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try """
        # Top
        [ok](docs/a.md#a-heading) [ok](#top) [web](https://example.org/x.md) [mail](mailto:x@y)
        [gone](docs/missing.md) [bad anchor](docs/a.md#nowhere) [bad here](#nothing)
        `[in code](docs/missing-too.md)`
        ```
        [in a block](docs/missing-three.md)
        ```
        """.write(toFile: dir + "/README.md", atomically: true, encoding: .utf8)
        try "# A heading\n[up](../README.md#top)\n".write(toFile: dir + "/docs/a.md", atomically: true, encoding: .utf8)
        var checked = 0
        let broken = try DocumentationLinks.brokenLinks(root: dir, pages: DocumentationLinks.pages(root: dir),
                                                        checked: &checked)
        XCTAssertEqual(broken, ["README.md: docs/missing.md (no such file)",
                                "README.md: docs/a.md#nowhere (no heading makes #nowhere)",
                                "README.md: #nothing (no heading makes #nothing)"])
        XCTAssertEqual(checked, 6)
    }
}

/// Markdown links and headings, as GitHub reads them, well enough for this repository.
enum DocumentationLinks {
    /// README.md, CHANGELOG.md and every .md under docs/, relative to `root`, sorted.
    static func pages(root: String) throws -> [String] {
        var pages = ["README.md", "CHANGELOG.md"].filter { FileManager.default.fileExists(atPath: "\(root)/\($0)") }
        if let walker = FileManager.default.enumerator(atPath: "\(root)/docs") {
            for case let path as String in walker where path.hasSuffix(".md") {
                pages.append("docs/\(path)")
            }
        }
        return pages.sorted()
    }

    /// "page: target (why)" for each relative link of `pages` that does not resolve.
    static func brokenLinks(root: String, pages: [String], checked: inout Int) throws -> [String] {
        var broken: [String] = []
        var anchorsOf: [String: Set<String>] = [:]
        func anchors(_ page: String) throws -> Set<String> {
            if let known = anchorsOf[page] { return known }
            let found = Set(try Self.anchors(in: String(contentsOfFile: "\(root)/\(page)", encoding: .utf8)))
            anchorsOf[page] = found
            return found
        }
        for page in pages {
            let text = try String(contentsOfFile: "\(root)/\(page)", encoding: .utf8)
            let directory = (page as NSString).deletingLastPathComponent
            for target in links(in: text) {
                if target.contains("://") || target.hasPrefix("mailto:") { continue }
                checked += 1
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let path = String(parts[0])
                let anchor = parts.count > 1 ? String(parts[1]) : ""
                let resolved = path.isEmpty ? page : normalise(directory.isEmpty ? path : "\(directory)/\(path)")
                guard FileManager.default.fileExists(atPath: "\(root)/\(resolved)") else {
                    broken.append("\(page): \(target) (no such file)")
                    continue
                }
                if anchor.isEmpty { continue }
                guard resolved.hasSuffix(".md") else {
                    broken.append("\(page): \(target) (an anchor into a file that is not Markdown)")
                    continue
                }
                if !(try anchors(resolved)).contains(anchor.removingPercentEncoding ?? anchor) {
                    broken.append("\(page): \(target) (no heading makes #\(anchor))")
                }
            }
        }
        return broken
    }

    /// Each `docs/….md` named in Sources/, Tests/, scripts/, packaging/, systemd/, etc/ or
    /// Package.swift that does not exist, as "file: page".
    static func missingCitedPages(root: String, cited: inout Int) throws -> [String] {
        let pattern = try NSRegularExpression(pattern: #"docs/[A-Za-z0-9_./-]+?\.md"#)
        var files = ["Package.swift"]
        for top in ["Sources", "Tests", "scripts", "packaging", "systemd", "etc"] {
            guard let walker = FileManager.default.enumerator(atPath: "\(root)/\(top)") else { continue }
            for case let path as String in walker
            where [".swift", ".sh", ".c", ".h", ".py", ".toml", ".service"].contains(where: path.hasSuffix) || !path.contains(".") {
                files.append("\(top)/\(path)")
            }
        }
        var missing: [String] = []
        for file in files {
            var isDirectory: ObjCBool = false
            // This file names pages that do not exist, on purpose (testTheCheckFindsBrokenLinks).
            guard !file.hasSuffix("/DocumentationLinksTests.swift"),
                  FileManager.default.fileExists(atPath: "\(root)/\(file)", isDirectory: &isDirectory),
                  !isDirectory.boolValue,
                  let text = try? String(contentsOfFile: "\(root)/\(file)", encoding: .utf8) else { continue }
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let page = (text as NSString).substring(with: match.range)
                cited += 1
                if !FileManager.default.fileExists(atPath: "\(root)/\(page)") {
                    missing.append("\(file): \(page)")
                }
            }
        }
        return missing
    }

    /// The targets of `[text](target)` and `![alt](target)` outside code blocks and code
    /// spans, without an optional "title".
    static func links(in text: String) -> [String] {
        let prose = withoutCode(text)
        let pattern = try! NSRegularExpression(pattern: #"\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#)
        return pattern.matches(in: prose, range: NSRange(prose.startIndex..., in: prose)).map {
            (prose as NSString).substring(with: $0.range(at: 1))
        }
    }

    /// The anchors GitHub makes for the headings of `text`: the slug of each ATX heading
    /// outside code blocks, a repeated slug numbered -1, -2, ….
    static func anchors(in text: String) -> [String] {
        var seen: [String: Int] = [:]
        var anchors: [String] = []
        for line in proseLines(text) {
            let hashes = line.prefix { $0 == "#" }.count
            guard (1...6).contains(hashes), line.dropFirst(hashes).first == " " else { continue }
            var title = line.dropFirst(hashes).trimmingCharacters(in: .whitespaces)
            while title.hasSuffix("#") { title = String(title.dropLast()).trimmingCharacters(in: .whitespaces) }
            let base = slug(title)
            let count = seen[base, default: 0]
            seen[base] = count + 1
            anchors.append(count == 0 ? base : "\(base)-\(count)")
        }
        return anchors
    }

    /// GitHub's heading slug: lower case, punctuation other than '-' and '_' removed,
    /// each space a '-'. Link syntax in a heading counts by its text.
    static func slug(_ heading: String) -> String {
        let text = heading.replacingOccurrences(of: #"\[([^\]]*)\]\([^)]*\)"#, with: "$1", options: .regularExpression)
        var slug = ""
        for character in text.lowercased() {
            if character.isLetter || character.isNumber || character == "-" || character == "_" {
                slug.append(character)
            } else if character == " " {
                slug.append("-")
            }
        }
        return slug
    }

    /// The lines outside fenced code blocks (``` or ~~~).
    static func proseLines(_ text: String) -> [String] {
        var inFence = false
        var lines: [String] = []
        for line in text.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                inFence.toggle()
                continue
            }
            if !inFence { lines.append(line) }
        }
        return lines
    }

    /// The text outside fenced code blocks, with code spans blanked.
    static func withoutCode(_ text: String) -> String {
        proseLines(text).joined(separator: "\n")
            .replacingOccurrences(of: #"`[^`\n]*`"#, with: "``", options: .regularExpression)
    }

    /// `a/b/../c` as `a/c`, `./a` as `a`, a trailing `/` dropped.
    static func normalise(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            if part == "." { continue }
            if part == "..", let last = parts.last, last != ".." { parts.removeLast() } else { parts.append(part) }
        }
        return parts.joined(separator: "/")
    }
}
