import Foundation
import Rigs
import XCTest

/// `status --json` against its schema, docs/status.schema.json, validated by Debian's
/// python3-jsonschema (a real validator, not a hand-written check of a few fields).
public enum StatusSchema {
    public static let path = Repository.path("docs/status.schema.json")

    /// Fails the calling test, naming what does not match, when `json` is not a report the
    /// schema allows.
    public static func assertMatches(_ json: Data, file: StaticString = #filePath, line: UInt = #line) throws {
        let dir = try TemporaryDirectory("status-schema")
        let document = dir.file("status.json")
        try json.write(to: URL(fileURLWithPath: document))
        let check = try ChildProcess("/usr/bin/python3", ["-c", """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1])); doc = json.load(open(sys.argv[2]))
            jsonschema.Draft202012Validator(schema).validate(doc)
            """, path, document], logDirectory: dir.path)
        XCTAssertEqual(check.wait(), 0, "status --json does not match docs/status.schema.json: \(check.stderr())", file: file, line: line)
    }
}
