import Foundation
import TestRigs
import XCTest

/// Validates `status --json` with Debian's python3-jsonschema against docs/status.schema.json.
func assertMatchesSchema(_ json: String, in dir: TemporaryDirectory, file: StaticString = #filePath, line: UInt = #line) throws {
    let schema = Repository.root + "/docs/status.schema.json"
    let path = dir.file("status.json")
    try json.write(toFile: path, atomically: true, encoding: .utf8)
    let check = try ChildProcess("/usr/bin/python3", ["-c", """
        import json, sys, jsonschema
        jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate(json.load(open(sys.argv[2])))
        """, schema, path], logDirectory: dir.path)
    XCTAssertEqual(check.wait(), 0, "status --json does not match docs/status.schema.json: \(check.stderr())", file: file, line: line)
}
