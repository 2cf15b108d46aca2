import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `[metrics] textfile` from the real daemon: the file passes `promtool check metrics`
/// (Debian's prometheus package), parses with the Python prometheus_client parser, and
/// its numbers are those of `status --json`; `status --prometheus` prints the same.
final class MetricsDaemonTests: XCTestCase {
    /// Samples as "name{label="value"}" -> value, by prometheus_client's own parser.
    func parse(_ text: String, in directory: TemporaryDirectory) throws -> [String: Double] {
        let input = directory.file("metrics-\(UUID().uuidString.prefix(8)).prom")
        try text.write(toFile: input, atomically: true, encoding: .utf8)
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            out = {}
            for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                for s in family.samples:
                    labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(s.labels.items()))
                    out[s.name + ("{" + labels + "}" if labels else "")] = s.value
            print(json.dumps(out))
            """
        let child = try ChildProcess("/usr/bin/python3", ["-c", script, input], logDirectory: directory.path)
        XCTAssertEqual(child.wait(timeout: 30), 0, child.stderr())
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(child.stdout().utf8)) as? [String: Double])
    }

    func testTheMetricsFileParsesAndMatchesStatus() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool") else {
            return XCTFail("promtool is not installed (Debian's prometheus package): run scripts/install-deps.sh")
        }
        let textfile = "METRICS_DIR/ariata-agent.prom"
        let rig = try DaemonRig(chunkSeconds: 5, overlapSeconds: 0, checkInterval: 1)
        let path = textfile.replacingOccurrences(of: "METRICS_DIR", with: rig.directory.path)
        try (try String(contentsOfFile: rig.configPath, encoding: .utf8) + "\n[metrics]\ntextfile = \"\(path)\"\n")
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        try rig.startAgent()
        let database = try rig.openDatabase()
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        try waitUntil("records of each capture stream", timeout: 60) {
            try database.recordQueue.records(stream: .microphone).count >= 2 && database.recordQueue.records(stream: .location).count >= 3
        }
        try waitUntil("the metrics file", timeout: 10) { FileManager.default.fileExists(atPath: path) }

        // promtool checks the format and Prometheus' naming rules.
        let promtool = try ChildProcess("/bin/sh", ["-c", "/usr/bin/promtool check metrics < '\(path)'"], logDirectory: rig.directory.path)
        XCTAssertEqual(promtool.wait(timeout: 30), 0, promtool.stdout() + promtool.stderr())

        // Freeze the numbers: pause capture, let the uploader drain the queue, wait for a
        // file written after that, stop the daemon; then status reads the same database.
        XCTAssertEqual(try cli.run(["pause"]).status, 0)
        try waitUntil("nothing pending", timeout: 60) { try database.recordQueue.counts().allSatisfy { $0.status != .pending } }
        let settled = Date()
        try waitUntil("a metrics file written after that", timeout: 10) {
            ((try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? .distantPast) > settled.addingTimeInterval(1)
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let file = try parse(try String(contentsOfFile: path, encoding: .utf8), in: rig.directory)
        let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))

        for s in report.streams {
            let label = "{stream=\"\(s.name)\"}"
            XCTAssertEqual(file["ariata_agent_pending_records\(label)"], Double(s.pending), s.name)
            XCTAssertEqual(file["ariata_agent_pending_bytes\(label)"], Double(s.pendingBytes), s.name)
            XCTAssertEqual(file["ariata_agent_uploaded_records\(label)"], Double(s.uploaded), s.name)
            XCTAssertEqual(file["ariata_agent_failed_records\(label)"], Double(s.failed), s.name)
            XCTAssertEqual(file["ariata_agent_failed_bytes\(label)"], s.failedBytes.map(Double.init), s.name)
            XCTAssertEqual(file["ariata_agent_sent_records_total\(label)"], Double(s.recordsSent), s.name)
            XCTAssertEqual(file["ariata_agent_sent_bytes_total\(label)"], Double(s.bytesSent), s.name)
            XCTAssertEqual(file["ariata_agent_stream_paused\(label)"], s.paused ? 1 : 0, s.name)
            XCTAssertEqual(file["ariata_agent_storage_evicted_records_total\(label)"], Double(s.evicted), s.name)
            if let captured = s.lastCapturedAt {
                XCTAssertEqual(try XCTUnwrap(file["ariata_agent_last_capture_timestamp_seconds\(label)"], s.name),
                               captured.timeIntervalSince1970, accuracy: 0.001)
            }
            if let success = s.lastUploadSuccessAt {
                XCTAssertEqual(try XCTUnwrap(file["ariata_agent_last_upload_success_timestamp_seconds\(label)"], s.name),
                               success.timeIntervalSince1970, accuracy: 0.001)
            }
        }
        XCTAssertGreaterThan(file["ariata_agent_sent_records_total{stream=\"microphone\"}"] ?? 0, 0, "the numbers are not all zero")
        XCTAssertEqual(file["ariata_agent_daemon_running"], 1, "written by the running daemon")
        XCTAssertEqual(file["ariata_agent_info{version=\"\(report.agentVersion)\"}"], 1)

        // Metering is the running daemon's to say (no NetworkManager in this rig: nothing held).
        XCTAssertEqual(file["ariata_agent_upload_held_on_metered{stream=\"microphone\"}"], 0)
        XCTAssertNil(file["ariata_agent_network_metered"], "not known without NetworkManager")

        // status --prometheus prints the same metrics, and they pass promtool too.
        let printed = try cli.run(["status", "--prometheus"])
        let again = try parse(printed.stdout, in: rig.directory)
        func compared(_ key: String) -> Bool {
            !["age_seconds", "disk_free", "queue_size", "warnings", "metered"].contains { key.contains($0) }
        }
        XCTAssertEqual(Set(again.keys.filter(compared)), Set(file.keys.filter(compared)))
        XCTAssertFalse(again.keys.contains { $0.contains("metered") }, "a stopped daemon says nothing of the network")
        XCTAssertEqual(again["ariata_agent_daemon_running"], 0)
        XCTAssertEqual(again["ariata_agent_pending_records{stream=\"location\"}"], file["ariata_agent_pending_records{stream=\"location\"}"])
        try printed.stdout.write(toFile: rig.directory.file("printed.prom"), atomically: true, encoding: .utf8)
        let check = try ChildProcess("/bin/sh", ["-c", "/usr/bin/promtool check metrics < '\(rig.directory.file("printed.prom"))'"],
                                     logDirectory: rig.directory.path)
        XCTAssertEqual(check.wait(timeout: 30), 0, check.stdout() + check.stderr())
        // No temporary file is left beside it for the collector to trip over.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: rig.directory.path).filter { $0.hasSuffix(".tmp") }
        XCTAssertEqual(leftovers, [])
    }

    func testABadTextfileNamesTheKey() throws {
        for (value, fragment) in [("relative.prom", "is not an absolute path"), ("/var/lib/x.txt", "does not end in .prom")] {
            XCTAssertThrowsError(try AgentConfig(toml: "[metrics]\ntextfile = \"\(value)\"", file: "/etc/ariata/agent.toml")) { error in
                XCTAssertEqual((error as? ConfigError)?.key, "metrics.textfile")
                XCTAssertTrue("\(error)".contains(fragment), "\(error)")
            }
        }
    }
}
