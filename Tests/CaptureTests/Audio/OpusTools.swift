import Foundation
import TestRigs
import XCTest

/// The reference tools from opus-tools, run as real processes on a chunk's bytes.
enum OpusTools {
    /// `opusinfo` output; fails the test when opusinfo rejects the file.
    static func info(_ data: Data, in directory: TemporaryDirectory, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let path = directory.file("info-\(UUID().uuidString.prefix(8)).opus")
        try data.write(to: URL(fileURLWithPath: path))
        let child = try ChildProcess("opusinfo", [path], logDirectory: directory.path)
        let status = child.wait(timeout: 60)
        let output = child.stdout() + child.stderr()
        XCTAssertEqual(status, 0, "opusinfo rejected the chunk: \(output)", file: file, line: line)
        XCTAssertFalse(output.contains("WARNING") || output.contains("ERROR"), "opusinfo complains: \(output)", file: file, line: line)
        return output
    }

    /// Decodes with `opusdec --rate 16000` to samples.
    static func decode(_ data: Data, in directory: TemporaryDirectory, file: StaticString = #filePath, line: UInt = #line) throws -> [Int16] {
        let name = UUID().uuidString.prefix(8)
        let input = directory.file("decode-\(name).opus")
        let output = directory.file("decode-\(name).raw")
        try data.write(to: URL(fileURLWithPath: input))
        let child = try ChildProcess("opusdec", ["--quiet", "--rate", "16000", input, output], logDirectory: directory.path)
        let status = child.wait(timeout: 60)
        XCTAssertEqual(status, 0, "opusdec failed: \(child.stderr())", file: file, line: line)
        return try SpeechInput.samples(ofRawFile: output)
    }

    /// Normalised correlation of two equally long stretches (1 = the same waveform).
    static func correlation(_ a: ArraySlice<Int16>, _ b: ArraySlice<Int16>) -> Double {
        precondition(a.count == b.count)
        var ab = 0.0, aa = 0.0, bb = 0.0
        for (x, y) in zip(a, b) {
            let dx = Double(x), dy = Double(y)
            ab += dx * dy
            aa += dx * dx
            bb += dy * dy
        }
        guard aa > 0, bb > 0 else { return 0 }
        return ab / (aa * bb).squareRoot()
    }
}
