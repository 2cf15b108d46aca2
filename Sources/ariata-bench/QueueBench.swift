import AgentCore
import Foundation
import Platform

/// `ariata-bench queue [--records N] [--dir D]`: enqueue throughput and latency, batch and
/// count times on a large table, bytes per record.
enum QueueBench {
    static func run(records big: Int, work directory: WorkDirectoryOption) throws {
        let work = try directory.workDirectory("queue")
        defer { try? FileManager.default.removeItem(atPath: work) }

        let location = try locationPayload()
        let audio = Data(repeating: UInt8(ascii: "A"), count: 80_000)
        print("synchronous=FULL, WAL; one transaction per enqueue")
        try enqueueLatency(label: "location (\(location.count) B)", payload: location, count: 2_000, in: work)
        try enqueueLatency(label: "audio (80 KB)", payload: audio, count: 500, in: work)
        try largeTable(records: big, payload: location, in: work)
    }

    static func locationPayload() throws -> Data {
        try NewRecord(stream: .location, capturedAt: Date(), fields: [
            "timestamp": RFC3339.string(from: Date()), "latitude": 52.520_008_123, "longitude": 13.404_954_456,
            "altitude": 34.2, "speed": 1.25, "course": 271.4, "horizontal_accuracy": 4.1,
            "vertical_accuracy": 7.9, "fix_mode": 3, "satellites_used": 9,
        ]).payload
    }

    static func enqueueLatency(label: String, payload: Data, count: Int, in dir: String) throws {
        let path = "\(dir)/latency-\(UUID().uuidString).sqlite"
        let database = try AgentDatabase(path: path)
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        let start = Monotonic.now
        for _ in 0..<count {
            let t0 = Monotonic.now
            try database.recordQueue.enqueue(NewRecord(stream: .location, capturedAt: Date(), payload: payload))
            latencies.append((Monotonic.now - t0) * 1e3)
        }
        let seconds = Monotonic.now - start
        latencies.sort()
        func pct(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print(String(format: "enqueue %@: %d records, %.0f records/s, p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                     label, count, Double(count) / seconds, pct(0.5), pct(0.99), latencies.last ?? 0))
    }

    static func largeTable(records: Int, payload: Data, in dir: String) throws {
        let path = "\(dir)/large.sqlite"
        let database = try AgentDatabase(path: path)
        let t0 = Date()
        let streams: [StreamName] = [.location, .health, .microphone]
        var made = 0
        while made < records {
            let n = min(20_000, records - made)
            let batch = (0..<n).map { i in
                NewRecord(stream: streams[(made + i) % 3], capturedAt: Date(), payload: payload)
            }
            try database.recordQueue.enqueue(batch, anchor: nil)
            made += n
        }
        print(String(format: "filled %d records in %.1f s (bulk, 20,000 per transaction)", records, Date().timeIntervalSince(t0)))
        // Upload a third of one stream so counts have several statuses.
        let firstBatch = try database.recordQueue.pendingBatch(stream: .health, maxCount: 500, maxBytes: 4_000_000)
        try database.recordQueue.markDelivered(firstBatch.map(\.seq))

        let reps = 50
        var batchTimes: [Double] = []
        var countTimes: [Double] = []
        var oldestTimes: [Double] = []
        for _ in 0..<reps {
            var t = Monotonic.now
            let batch = try database.recordQueue.pendingBatch(stream: .location, maxCount: 500, maxBytes: 4_000_000)
            batchTimes.append((Monotonic.now - t) * 1e3)
            precondition(batch.count == 500)
            t = Monotonic.now
            let counts = try database.recordQueue.counts()
            countTimes.append((Monotonic.now - t) * 1e3)
            precondition(counts.reduce(0) { $0 + $1.records } == records)
            t = Monotonic.now
            _ = try database.recordQueue.oldestPendingAge(stream: .microphone)
            oldestTimes.append((Monotonic.now - t) * 1e3)
        }
        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        print(String(format: "with %d records: take a batch of 500 %.2f ms, counts per stream/status %.3f ms, oldest pending %.3f ms (medians of %d)",
                     records, median(batchTimes), median(countTimes), median(oldestTimes), reps))
        let bytes = database.fileBytes()
        print(String(format: "database %.1f MB for %d records: %.0f bytes per record (payload %d B, so %.0f B overhead)",
                     Double(bytes) / 1e6, records, Double(bytes) / Double(records), payload.count,
                     Double(bytes) / Double(records) - Double(payload.count)))
    }
}
