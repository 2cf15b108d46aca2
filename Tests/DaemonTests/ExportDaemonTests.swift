import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `ariata-agent export` of a real run, beside the running daemon, opened by real readers:
/// the GPX by xmllint against the GPX 1.1 schema and by gpsbabel, the GeoJSON and CSV by
/// parsers, every .opus file by opusdec.
final class ExportDaemonTests: XCTestCase {
    func run(_ program: String, _ arguments: [String], in directory: String) throws -> (status: Int32?, output: String) {
        let child = try ChildProcess(program, arguments, logDirectory: directory)
        let status = child.wait(timeout: 60)
        return (status, child.stdout() + child.stderr())
    }

    func testExportOfARealRunOpensInRealReaders() throws {
        for tool in ["/usr/bin/xmllint", "/usr/bin/gpsbabel", "/usr/bin/opusdec"] {
            guard FileManager.default.isExecutableFile(atPath: tool) else { return XCTFail("\(tool) is not installed: run scripts/install-deps.sh") }
        }
        let rig = try DaemonRig(chunkSeconds: 5, overlapSeconds: 1, checkInterval: 1)
        try rig.startAgent()
        let database = try rig.openDatabase()
        try rig.appendHeartRates(Array(60..<90), at: Date().addingTimeInterval(-120))
        try waitUntil("fixes, audio and health samples", timeout: 60) {
            try database.recordQueue.records(stream: .location).count >= 6 && database.recordQueue.records(stream: .microphone).count >= 3
                && database.recordQueue.records(stream: .health).count >= 30
        }
        let cut = Date().addingTimeInterval(-1)
        let until = RFC3339.string(from: cut)
        func expected(_ stream: StreamName) throws -> [QueuedRecord] {
            try database.recordQueue.records(stream: stream).filter { $0.capturedAt < cut && $0.status != .failed }
                .sorted { ($0.capturedAt, $0.seq) < ($1.capturedAt, $1.seq) }
        }
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        let dir = rig.directory

        // GPX: valid against the schema, and gpsbabel reads back every point.
        let gpxPath = dir.file("run.gpx")
        let gpx = try cli.run(["export", "--stream", "location", "--format", "gpx", "--until", until, "--out", gpxPath])
        XCTAssertEqual(gpx.status, 0, gpx.stderr)
        let fixes = try expected(.location)
        XCTAssertTrue(gpx.stderr.hasPrefix("exported \(fixes.count) location fixes as gpx"), gpx.stderr)
        try GPX11Schema.text.write(toFile: dir.file("gpx.xsd"), atomically: true, encoding: .utf8)
        let valid = try run("/usr/bin/xmllint", ["--noout", "--schema", dir.file("gpx.xsd"), gpxPath], in: dir.path)
        XCTAssertEqual(valid.status, 0, valid.output)
        // The check can fail: a longitude out of GPX's range is refused.
        let text = try String(contentsOfFile: gpxPath, encoding: .utf8)
        let broken = text.replacingOccurrences(of: "<trkpt lat=", with: "<trkpt lon=\"200\" x=", options: [], range: text.range(of: "<trkpt lat="))
        try broken.write(toFile: dir.file("broken.gpx"), atomically: true, encoding: .utf8)
        XCTAssertNotEqual(try run("/usr/bin/xmllint", ["--noout", "--schema", dir.file("gpx.xsd"), dir.file("broken.gpx")], in: dir.path).status, 0)
        let babel = try run("/usr/bin/gpsbabel", ["-t", "-i", "gpx", "-f", gpxPath, "-o", "unicsv", "-F", dir.file("babel.csv")], in: dir.path)
        XCTAssertEqual(babel.status, 0, babel.output)
        // unicsv ends lines with CR LF, one Character in Swift: split on both.
        let rows = try String(contentsOfFile: dir.file("babel.csv"), encoding: .utf8).components(separatedBy: .newlines).filter { !$0.isEmpty }
        XCTAssertEqual(rows.count - 1, fixes.count, rows.joined(separator: "\n"))
        guard rows.count > 1 else { return XCTFail("gpsbabel read no track points of\n\(text.prefix(1_500))") }
        let header = rows[0].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let latColumn = try XCTUnwrap(header.firstIndex(of: "Latitude"), rows[0])
        let firstFix = try XCTUnwrap(try JSONSerialization.jsonObject(with: fixes[0].payload) as? [String: Any])
        let babelLatitude = try XCTUnwrap(Double(rows[1].split(separator: ",")[latColumn]))
        XCTAssertEqual(babelLatitude, try XCTUnwrap(firstFix["latitude"] as? Double), accuracy: 1e-6)

        // GeoJSON: a FeatureCollection of the same points, longitude first.
        let geojson = try cli.run(["export", "--stream", "location", "--format", "geojson", "--until", until])
        XCTAssertEqual(geojson.status, 0, geojson.stderr)
        let collection = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(geojson.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(collection["type"] as? String, "FeatureCollection")
        let features = try XCTUnwrap(collection["features"] as? [[String: Any]])
        XCTAssertEqual(features.count, fixes.count)
        let coordinates = try XCTUnwrap((features[0]["geometry"] as? [String: Any])?["coordinates"] as? [Double])
        XCTAssertEqual(coordinates[0], try XCTUnwrap(firstFix["longitude"] as? Double), accuracy: 1e-9)
        XCTAssertEqual(coordinates[1], try XCTUnwrap(firstFix["latitude"] as? Double), accuracy: 1e-9)

        // Health: CSV with a header and a row per sample; JSON Lines a record per line.
        let samples = try expected(.health)
        let csv = try cli.run(["export", "--stream", "health", "--format", "csv", "--until", until])
        XCTAssertEqual(csv.status, 0, csv.stderr)
        let lines = csv.stdout.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        XCTAssertEqual(lines.count, samples.count + 1)
        XCTAssertTrue(lines[0].hasPrefix("id,timestamp,metric_type,value,unit"), lines[0])
        let jsonl = try cli.run(["export", "--stream", "health", "--format", "jsonl", "--until", until])
        XCTAssertEqual(jsonl.stdout.split(separator: "\n").count, samples.count)

        // Microphone: one file per chunk, named by its start, each decoded by opusdec.
        let chunks = try expected(.microphone)
        let audioDir = dir.file("audio")
        let audio = try cli.run(["export", "--stream", "microphone", "--until", until, "--out", audioDir])
        XCTAssertEqual(audio.status, 0, audio.stderr)
        let files = try FileManager.default.contentsOfDirectory(atPath: audioDir).sorted()
        XCTAssertEqual(files.count, chunks.count)
        XCTAssertEqual(files.first, RFC3339.string(from: chunks[0].capturedAt).replacingOccurrences(of: ":", with: "") + ".opus")
        for file in files {
            let decoded = try run("/usr/bin/opusdec", ["--quiet", "--rate", "48000", "\(audioDir)/\(file)", dir.file("decoded.wav")], in: dir.path)
            XCTAssertEqual(decoded.status, 0, "\(file): \(decoded.output)")
            let wavBytes = (try FileManager.default.attributesOfItem(atPath: dir.file("decoded.wav"))[.size] as? NSNumber)?.intValue ?? 0
            XCTAssertGreaterThan(wavBytes, 48_000 * 2 * 4, "\(file) decodes to more than 4 s of its 5 s")
        }

        // The daemon went on undisturbed.
        XCTAssertTrue(try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8)).daemon.running)
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let wrong = try cli.run(["export", "--stream", "microphone", "--format", "gpx"])
        XCTAssertNotEqual(wrong.status, 0)
        XCTAssertTrue(wrong.stderr.contains("leave out --format, give --out DIR"), wrong.stderr)
    }
}
