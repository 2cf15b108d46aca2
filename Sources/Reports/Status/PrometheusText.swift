import AgentCore
import Foundation

/// A `StatusReport` in the Prometheus text exposition format (version 0.0.4), for
/// node_exporter's textfile collector (`[metrics] textfile`) and `status --prometheus`.
/// Built from the report, so every number is the one `status --json` shows.
///
/// Names follow Prometheus conventions: prefix `ariata_agent_`, base units (seconds,
/// bytes), `_total` for counters, `_timestamp_seconds` for points in time (Unix seconds),
/// one `stream` or `code` label; a value that is not known is left out.
public enum PrometheusText {
    public static func render(_ r: StatusReport) -> String {
        var out = MetricWriter()
        out.gauge("ariata_agent_info", "Agent version (the value is always 1).", [(["version": r.agentVersion], 1)])
        out.gauge("ariata_agent_daemon_running", "1 when the daemon runs.", [([:], r.daemon.running ? 1 : 0)])
        func perStream(_ value: (StatusReport.Stream) -> Double?) -> [([String: String], Double)] {
            r.streams.compactMap { s in value(s).map { (["stream": s.name], $0) } }
        }
        out.gauge("ariata_agent_pending_records", "Records waiting for upload.", perStream { Double($0.pending) })
        out.gauge("ariata_agent_pending_bytes", "Payload bytes waiting for upload.", perStream { Double($0.pendingBytes) })
        out.gauge("ariata_agent_failed_records", "Records the server refused, kept until retention.", perStream { Double($0.failed) })
        out.gauge("ariata_agent_failed_bytes", "Payload bytes of the failed records.", perStream { $0.failedBytes.map(Double.init) })
        out.gauge("ariata_agent_uploaded_records", "Uploaded records still in the queue (until retention).", perStream { Double($0.uploaded) })
        out.gauge("ariata_agent_oldest_pending_age_seconds", "Age of the oldest pending record.", perStream { $0.oldestPendingAgeSeconds })
        out.gauge("ariata_agent_last_capture_timestamp_seconds", "Capture time of the newest record in the queue.",
                  perStream { $0.lastCapturedAt?.timeIntervalSince1970 })
        out.gauge("ariata_agent_last_upload_success_timestamp_seconds", "Time of the last successful upload.",
                  perStream { $0.lastUploadSuccessAt?.timeIntervalSince1970 })
        out.counter("ariata_agent_sent_records_total", "Records the server confirmed.", perStream { Double($0.recordsSent) })
        out.counter("ariata_agent_sent_bytes_total", "Payload bytes of the records the server confirmed.", perStream { Double($0.bytesSent) })
        out.counter("ariata_agent_upload_errors_total", "Failed upload attempts by error code (docs/operations.md, Error codes).",
                    (r.uploader.errors ?? []).map { (["code": $0.code], Double($0.count)) })
        out.gauge("ariata_agent_stream_healthy", "1 when the stream is healthy (0 when unhealthy, paused, disabled or unknown).",
                  perStream { $0.liveness == "healthy" ? 1 : 0 })
        out.gauge("ariata_agent_stream_paused", "1 when the stream is paused (ariata-agent pause).", perStream { $0.paused ? 1 : 0 })
        out.gauge("ariata_agent_stream_paused_until_timestamp_seconds", "When a timed pause ends by itself.",
                  perStream { $0.pausedUntil?.timeIntervalSince1970 })
        out.counter("ariata_agent_storage_evicted_records_total", "Pending records the storage guard deleted before upload (E004).",
                    perStream { Double($0.evicted) })
        out.counter("ariata_agent_location_privacy_skipped_total", "Fixes not written in a privacy zone, since the daemon started.",
                    r.streams.compactMap { s in s.privacySkipped.map { (["stream": s.name], Double($0)) } })
        out.counter("ariata_agent_location_stationary_thinned_total",
                    "Fixes not written while the receiver stood still ([location] stationary_interval, min_distance), since the daemon started.",
                    r.streams.compactMap { s in s.stationaryThinned.map { (["stream": s.name], Double($0)) } })
        out.counter("ariata_agent_location_too_coarse_total", "Fixes not written as coarser than [location] max_accuracy, since the daemon started.",
                    r.streams.compactMap { s in s.tooCoarse.map { (["stream": s.name], Double($0)) } })
        out.gauge("ariata_agent_location_last_accuracy_metres", "The horizontal accuracy of the latest fix received, written or not.",
                  r.streams.compactMap { s in s.lastAccuracy.map { (["stream": s.name], $0) } })
        out.counter("ariata_agent_microphone_silent_chunks_dropped_total",
                    "Audio chunks dropped at capture as silent ([microphone] upload_silent = false), since the daemon started.",
                    r.streams.compactMap { s in s.silentChunksDropped.map { (["stream": s.name], Double($0)) } })
        let sensors = r.streams.flatMap { s in (s.sensors ?? []).map { (s.name, $0) } }
        out.gauge("ariata_agent_health_sensor_battery_percent", "A Bluetooth LE heart-rate sensor's battery (warned below 15 %).",
                  sensors.compactMap { stream, sensor in sensor.battery.map { (["stream": stream, "source": sensor.name], Double($0)) } })
        out.gauge("ariata_agent_health_sensor_connected", "1 while a Bluetooth LE heart-rate sensor is connected and notifying.",
                  sensors.map { stream, sensor in (["stream": stream, "source": sensor.name], sensor.connected ? 1 : 0) })
        out.gauge("ariata_agent_network_metered", "1 while the connection is metered (NetworkManager), 0 while it is not; absent while not known.",
                  r.network?.metered.map { [([:], $0 ? 1 : 0)] } ?? [])
        out.gauge("ariata_agent_upload_held_on_metered", "1 while the stream's scheduled uploads wait for an unmetered connection ([upload] on_metered).",
                  r.network.map { network in r.streams.map { (["stream": $0.name], network.deferredStreams.contains($0.name) ? 1 : 0) } } ?? [])
        out.gauge("ariata_agent_queue_size_bytes", "Bytes of the queue database on disk (with its WAL).", [([:], Double(r.database.sizeBytes))])
        out.gauge("ariata_agent_disk_free_bytes", "Free bytes on the file system of the queue.",
                  r.database.freeDiskBytes.map { [([:], Double($0))] } ?? [])
        out.gauge("ariata_agent_storage_below_floor", "1 while the free disk is below the floor: the queue does not grow and new captures replace the oldest records (E004).",
                  [([:], r.database.belowFloorSince == nil ? 0 : 1)])
        out.gauge("ariata_agent_queue_max_bytes", "The queue's cap.", r.database.maxQueueBytes.map { [([:], Double($0))] } ?? [])
        out.gauge("ariata_agent_warnings", "Warnings status shows (0 when all is well).", [([:], Double(r.warnings.count))])
        return out.text
    }
}

/// Writes metric families: HELP and TYPE once, then the samples, label values escaped.
struct MetricWriter {
    private(set) var text = ""

    mutating func gauge(_ name: String, _ help: String, _ samples: [([String: String], Double)]) {
        family(name, help, "gauge", samples)
    }

    mutating func counter(_ name: String, _ help: String, _ samples: [([String: String], Double)]) {
        family(name, help, "counter", samples)
    }

    private mutating func family(_ name: String, _ help: String, _ type: String, _ samples: [([String: String], Double)]) {
        guard !samples.isEmpty else { return }
        text += "# HELP \(name) \(help.replacingOccurrences(of: "\\", with: "\\\\"))\n# TYPE \(name) \(type)\n"
        for (labels, value) in samples {
            let labelText = labels.isEmpty ? "" : "{" + labels.keys.sorted().map { key in
                "\(key)=\"\(Self.escape(labels[key] ?? ""))\""
            }.joined(separator: ",") + "}"
            text += "\(name)\(labelText) \(Self.number(value))\n"
        }
    }

    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Whole numbers without a decimal point; others in whole milliseconds, truncated
    /// toward the past as `status --json` writes times, so the two agree to the digit.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(format: "%.3f", (value * 1_000).rounded(.down) / 1_000)
    }
}
