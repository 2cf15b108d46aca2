import AgentCore
import Capture
import Foundation
import Reports
import Rigs

/// Time to export a day of data: `swift run -c release ariata-bench export [--fixes 8600]
/// [--chunks 2900] [--chunk-bytes 56000] [--samples 1500]`.
///
/// A queue is filled with a day's worth (a fix every 10 s, a 30 s audio chunk every 28 s
/// at 16 kbit/s, health samples), half of it marked uploaded as on a device that syncs;
/// then each export runs as `ariata-agent export` runs it, to files in a temporary
/// directory. Wall time and CPU time (getrusage) per export.
enum ExportBench {
    static func run(fixes: Int, chunks: Int, chunkBytes: Int, samples: Int) throws {
        let dir = try TemporaryDirectory("export-bench")
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        let start = Date().addingTimeInterval(-86_400)
        print("filling a queue: \(fixes) fixes, \(chunks) audio chunks of \(chunkBytes) bytes, \(samples) health samples")
        try fill(database, start: start, fixes: fixes, chunks: chunks, chunkBytes: chunkBytes, samples: samples)
        print("queue file: \(database.fileBytes()) bytes")

        for format in LocationFormat.allCases {
            try measure("location \(format.rawValue)") {
                let out = try ExportOutput(path: dir.file("day.\(format.rawValue)"))
                let n = try LocationExport(format: format, deviceName: "bench").write(from: database, since: nil, until: nil, to: out)
                return "\(n) fixes, \(out.bytesWritten) bytes"
            }
        }
        for format in HealthFormat.allCases {
            try measure("health \(format.rawValue)") {
                let out = try ExportOutput(path: dir.file("health.\(format.rawValue)"))
                let n = try HealthExport(format: format).write(from: database, since: nil, until: nil, to: out)
                return "\(n) samples, \(out.bytesWritten) bytes"
            }
        }
        try measure("microphone opus files") {
            let written = try AudioExport().write(from: database, since: nil, until: nil, directory: dir.file("audio"))
            return "\(written.files) files, \(written.bytes) bytes"
        }
    }

    static func fill(_ database: AgentDatabase, start: Date, fixes: Int, chunks: Int, chunkBytes: Int, samples: Int) throws {
        var batch: [NewRecord] = []
        func flush(_ stream: StreamName) throws {
            try database.recordQueue.enqueue(batch, anchor: nil)
            batch.removeAll()
        }
        for i in 0..<fixes {
            let time = start.addingTimeInterval(Double(i) * 86_400 / Double(fixes))
            batch.append(try NewRecord(stream: .location, capturedAt: time, fields: [
                "timestamp": RFC3339.string(from: time), "latitude": 52.52 + Double(i) * 1e-5, "longitude": 13.405 + Double(i) * 1e-5,
                "altitude": 35.5, "speed": 1.2, "course": 90.0, "horizontal_accuracy": 8.5, "vertical_accuracy": 12.0,
                "fix_mode": 3, "satellites_used": 9,
            ]))
            if batch.count == 1_000 { try flush(.location) }
        }
        try flush(.location)
        var generator = SystemRandomNumberGenerator()
        let audio = Data((0..<chunkBytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
        for i in 0..<chunks {
            let time = start.addingTimeInterval(Double(i) * 86_400 / Double(chunks))
            // As the microphone stores a chunk: its audio is the record's attachment (a file).
            var chunk = try NewRecord(stream: .microphone, capturedAt: time, fields: [
                "timestamp_start": RFC3339.string(from: time), "timestamp_end": RFC3339.string(from: time.addingTimeInterval(30)),
                "duration": 30.0, "overlap_duration": 2.0, "audio_format": "ogg",
                "sample_rate": 16_000, "channels": 1, "codec": "opus", "bitrate": 16_000,
            ])
            chunk.attachment = RecordAttachment(field: MicrophoneRecord.audioField, data: audio, fileExtension: "ogg")
            batch.append(chunk)
            if batch.count == 100 { try flush(.microphone) }
        }
        try flush(.microphone)
        for i in 0..<samples {
            let time = start.addingTimeInterval(Double(i) * 86_400 / Double(samples))
            batch.append(try NewRecord(stream: .health, capturedAt: time, fields: [
                "timestamp": RFC3339.string(from: time), "metric_type": "heart_rate", "value": 60 + i % 40, "unit": "bpm",
                "metadata": ["source": "bench"],
            ]))
        }
        try flush(.health)
        // Half of each stream uploaded, as on a device that syncs: export reads both.
        for stream in StreamName.allCases {
            let seqs = try database.recordQueue.records(stream: stream).map(\.seq)
            try database.recordQueue.markDelivered(Array(seqs.prefix(seqs.count / 2)))
        }
    }

    static func measure(_ name: String, _ body: () throws -> String) throws {
        let cpuBefore = cpuSeconds()
        let started = Date()
        let what = try body()
        let wall = Date().timeIntervalSince(started)
        print(String(format: "measured: export %@: %.2f s wall, %.2f s CPU (%@)", name, wall, cpuSeconds() - cpuBefore, what))
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
