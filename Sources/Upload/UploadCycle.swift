import AgentCore
import Foundation
import Logging

/// One pass over the queue: for each stream with pending records, batches bounded by
/// count and bytes are sent one after another over one transport (one connection),
/// and each is marked by the answer. Streams are independent: a stream that must wait
/// is skipped and the others go on; only an endpoint-wide problem (breaker open, token
/// refused, stopping) ends the whole cycle.
struct UploadCycle {
    let forced: Bool
    let upload: UploadConfig
    let policy: UploadPolicy
    let store: any UploadStore
    let clock: any WallClock
    let logger: Logger
    let state: UploaderStateBox
    let makeTransport: HTTPTransportFactory
    let random: @Sendable () -> Double
    let isStopping: @Sendable () -> Bool
    let progress: ((SyncProgress) -> Void)?

    private var transport: (any HTTPTransport)?
    private var settings: ServerSettings

    init(forced: Bool, upload: UploadConfig, policy: UploadPolicy, store: any UploadStore, clock: any WallClock,
         logger: Logger, state: UploaderStateBox, makeTransport: @escaping HTTPTransportFactory,
         random: @escaping @Sendable () -> Double, isStopping: @escaping @Sendable () -> Bool,
         progress: ((SyncProgress) -> Void)?) {
        self.forced = forced
        self.upload = upload
        self.policy = policy
        self.store = store
        self.clock = clock
        self.logger = logger
        self.state = state
        self.makeTransport = makeTransport
        self.random = random
        self.isStopping = isStopping
        self.progress = progress
        settings = state.with { $0.settings }
    }

    /// How a batch (or one of its split halves) ended.
    private enum Delivery {
        case done
        case retryLater(reason: String, code: AgentErrorCode?, retryAfter: TimeInterval?)
        case unauthorized(reason: String)
        case blamed(reason: String)
        case cancelled
        case storeError(String)
    }

    mutating func run() -> SyncReport {
        let start = clock.now()
        var report = SyncReport(startedAt: start, finishedAt: start)
        if let skip = gate(at: start) {
            report.skipped = skip
            report.finishedAt = clock.now()
            return report
        }
        let streams: [StreamName]
        do {
            streams = try store.streamsWithPending()
        } catch {
            logger.error("cannot read the queue: \(error)")
            report.skipped = .storeError(reason: "\(error)")
            report.finishedAt = clock.now()
            return report
        }

        var cycleEnded = false
        for stream in streams {
            var result = SyncReport.StreamResult()
            if !cycleEnded {
                cycleEnded = runStream(stream, into: &result)
            }
            report.streams[stream] = result
        }
        transport = nil
        publishState()
        report.finishedAt = clock.now()
        logSummary(report)
        return report
    }

    /// Why this cycle may not send anything at all.
    private func gate(at now: Date) -> SyncReport.Skip? {
        if isStopping() { return .stopped }
        if let problem = settings.configurationProblem { return .notConfigured(reason: problem) }
        guard !forced else { return nil }
        return state.with { s -> SyncReport.Skip? in
            if s.authPause.isPaused(at: now), let until = s.authPause.until { return .authPaused(until: until) }
            if case .open(let until) = s.breaker.state(at: now) { return .circuitOpen(until: until) }
            return nil
        }
    }

    /// Sends `stream`'s pending records batch by batch. Returns true when the whole
    /// cycle must end (the endpoint is failing, the token was refused, stopping).
    private mutating func runStream(_ stream: StreamName, into result: inout SyncReport.StreamResult) -> Bool {
        if !forced, let wait = state.with({ $0.retries[stream]?.nextAttemptAt }), clock.now() < wait {
            result.outcome = .waiting(until: wait)
            return false
        }
        let totals = (try? store.pendingTotals(stream: stream)) ?? (records: 0, bytes: 0)
        var progress = SyncProgress(stream: stream, recordsTotal: totals.records, bytesTotal: totals.bytes,
                                    recordsSent: 0, bytesSent: 0, recordsFailed: 0)
        self.progress?(progress)

        while true {
            if isStopping() { return true }
            let probe = !forced && state.with { $0.breaker.state(at: clock.now()) == .halfOpen }
            let maxRecords = probe ? min(policy.probeMaxRecords, upload.batchMaxRecords) : upload.batchMaxRecords
            let maxBody = probe ? min(policy.probeMaxBytes, upload.batchMaxBytes) : upload.batchMaxBytes
            let batch: [QueuedRecord]
            do {
                batch = try store.pendingBatch(stream: stream, maxCount: maxRecords,
                                               maxBytes: IngestBody.payloadBudget(maxBodyBytes: maxBody, maxRecords: maxRecords))
            } catch {
                logger.error("cannot read the \(stream.rawValue) queue: \(error)")
                result.outcome = .storeError(reason: "\(error)")
                return false
            }
            if batch.isEmpty {
                result.outcome = .drained
                return false
            }
            if probe { logger.info("endpoint half-open: probing with \(batch.count) \(stream.rawValue) records") }

            switch deliver(batch[...], stream: stream, result: &result, progress: &progress) {
            case .done:
                continue
            case .cancelled:
                return true
            case .storeError(let reason):
                result.outcome = .storeError(reason: reason)
                return false
            case .retryLater(let reason, let code, let retryAfter):
                return retryLater(stream, batch, reason: reason, code: code, retryAfter: retryAfter, result: &result)
            case .unauthorized(let reason):
                return unauthorized(stream, batch, reason: reason, result: &result)
            case .blamed(let reason):
                blamed(stream, batch, reason: reason, result: &result)
                return false
            }
        }
    }

    /// Sends `records` as one request and acts on the answer; a batch the server will
    /// never take is split in halves until the bad records stand alone.
    private mutating func deliver(_ records: ArraySlice<QueuedRecord>, stream: StreamName,
                                  result: inout SyncReport.StreamResult, progress: inout SyncProgress) -> Delivery {
        let batch = Array(records)
        let batchID = BatchID.make(stream: stream, recordIDs: batch.map(\.id))
        let body = IngestBody.build(stream: stream, deviceID: settings.deviceID, records: batch,
                                    batchID: batchID, timestamp: clock.now())
        let payloadBytes = Int64(batch.reduce(0) { $0 + $1.payload.count })
        let request: HTTPRequest
        do {
            request = try makeRequest(body: body, batchID: batchID)
        } catch {
            return .retryLater(reason: "\(error)", code: nil, retryAfter: nil)
        }
        if transport == nil {
            do {
                transport = try makeTransport(settings, isStopping)
            } catch {
                return .retryLater(reason: "\(error)", code: nil, retryAfter: nil)
            }
        }
        guard let transport else { return .cancelled }
        result.requests += 1
        let verdict = IngestVerdict.of(transport.send(request), now: clock.now())
        logger.debug("batch \(batchID.uuidString.lowercased()) of \(batch.count) \(stream.rawValue) records (\(body.count) bytes): \(verdict)")

        switch verdict {
        case .accepted:
            do {
                try store.markUploaded(batch.map(\.seq))
                try store.recordUploadResult(stream: stream, success: true, result: "delivered \(batch.count) records",
                                             code: nil, records: batch.count, bytes: request.body.count)
            } catch {
                // The server has them; left pending they are sent again and the server
                // keeps each record once by its id.
                logger.error("delivered \(batch.count) \(stream.rawValue) records but cannot mark them: \(error)")
                return .storeError("\(error)")
            }
            endpointAnswered(stream: stream)
            result.recordsSent += batch.count
            result.bytesSent += payloadBytes
            result.wireBytes += Int64(request.body.count)
            progress.recordsSent += batch.count
            progress.bytesSent += payloadBytes
            self.progress?(progress)
            return .done

        case .rejected(let reason):
            endpointAnswered(stream: stream)
            guard batch.count > 1 else { return isolate(batch[0], reason: reason, result: &result, progress: &progress) }
            let middle = records.startIndex + records.count / 2
            logger.notice("the server refused a batch of \(batch.count) \(stream.rawValue) records (\(reason)): splitting it to find the bad records")
            for half in [records[..<middle], records[middle...]] {
                let outcome = deliver(half, stream: stream, result: &result, progress: &progress)
                guard case .done = outcome else { return outcome }
            }
            return .done

        case .retryLater(let reason, let code, let retryAfter):
            return .retryLater(reason: reason, code: code, retryAfter: retryAfter)
        case .unauthorized(let reason):
            return .unauthorized(reason: reason)
        case .blamed(let reason):
            return .blamed(reason: reason)
        case .cancelled:
            return .cancelled
        }
    }

    private func makeRequest(body: Data, batchID: UUID) throws -> HTTPRequest {
        try IngestBody.request(settings: settings, body: body, batchID: batchID)
    }

    /// A record the server refuses on its own: failed for good, with the server's reason.
    private func isolate(_ record: QueuedRecord, reason: String, result: inout SyncReport.StreamResult,
                         progress: inout SyncProgress) -> Delivery {
        let id = record.id.uuidString.lowercased()
        logger.error("the server refuses \(record.stream.rawValue) record \(id) (queue seq \(record.seq)): \(reason); it is marked failed and will not be sent again")
        do {
            try store.markFailed([record.seq], error: reason)
            try store.recordUploadResult(stream: record.stream, success: false, result: "record \(id) refused: \(reason)",
                                         code: nil, records: 0, bytes: 0)
        } catch {
            logger.error("cannot mark record \(id) failed: \(error)")
            return .storeError("\(error)")
        }
        result.recordsFailed += 1
        progress.recordsFailed += 1
        self.progress?(progress)
        return .done
    }

    /// The endpoint answered as an ingest endpoint: it is up and the token is good.
    private func endpointAnswered(stream: StreamName) {
        state.with { s in
            s.breaker.recordSuccess()
            s.retries[stream] = nil
            s.authPause.clear()
            s.lastFailure = nil
        }
    }

    private func retryLater(_ stream: StreamName, _ batch: [QueuedRecord], reason: String, code: AgentErrorCode?,
                            retryAfter: TimeInterval?, result: inout SyncReport.StreamResult) -> Bool {
        let now = clock.now()
        let noted = "\(code.map { "\($0.rawValue) " } ?? "")\(reason)"
        // An outage is not the records' fault: their attempt counts stay as they are.
        try? store.noteAttempt(batch.map(\.seq), error: noted)
        try? store.recordUploadResult(stream: stream, success: false, result: noted, code: code, records: 0, bytes: 0)
        let (retryAt, breakerOpen) = state.with { s -> (Date, Date?) in
            var retry = s.retries[stream] ?? RetryState()
            retry.failed(at: now, reason: reason, code: code, retryAfter: retryAfter, schedule: policy.backoff, random: random())
            s.retries[stream] = retry
            s.breaker.recordFailure(at: now, retryAfter: retryAfter, schedule: policy.backoff, random: random())
            s.lastFailure = (reason, code)
            guard case .open(let until) = s.breaker.state(at: now) else { return (retry.nextAttemptAt ?? now, nil) }
            // The endpoint as a whole is failing: the breaker alone says when to try
            // again (its probe goes to whichever stream has records), so the streams'
            // own waits, drawn with other jitter, must not hold the probe back.
            s.retries.removeAll()
            return (until, until)
        }
        result.outcome = .retryLater(reason: reason, code: code, at: retryAt)
        if let breakerOpen {
            logger.warning("\(noted): the endpoint is failing; no uploads until \(RFC3339.string(from: breakerOpen))")
            return true
        }
        logger.warning("\(stream.rawValue): \(noted); retrying at \(RFC3339.string(from: retryAt))")
        return false
    }

    private func unauthorized(_ stream: StreamName, _ batch: [QueuedRecord], reason: String,
                              result: inout SyncReport.StreamResult) -> Bool {
        let now = clock.now()
        try? store.noteAttempt(batch.map(\.seq), error: "E002 \(reason)")
        try? store.recordUploadResult(stream: stream, success: false, result: "E002 \(reason)",
                                      code: .invalidToken, records: 0, bytes: 0)
        let until = state.with { s in
            s.lastFailure = (reason, .invalidToken)
            return s.authPause.refused(at: now)
        }
        logger.error("E002 \(reason); uploads paused until \(RFC3339.string(from: until)), nothing is dropped")
        result.outcome = .unauthorized(reason: reason, until: until)
        return true
    }

    /// An answer that blames the batch without naming a record: one attempt counted
    /// against each record (five and it fails), and the stream waits like after a failure.
    private func blamed(_ stream: StreamName, _ batch: [QueuedRecord], reason: String, result: inout SyncReport.StreamResult) {
        let now = clock.now()
        try? store.recordFailedAttempt(batch.map(\.seq), error: reason)
        try? store.recordUploadResult(stream: stream, success: false, result: reason, code: nil, records: 0, bytes: 0)
        let retryAt = state.with { s -> Date in
            var retry = s.retries[stream] ?? RetryState()
            retry.failed(at: now, reason: reason, code: nil, retryAfter: nil, schedule: policy.backoff, random: random())
            s.retries[stream] = retry
            return retry.nextAttemptAt ?? now
        }
        logger.warning("\(stream.rawValue): \(reason); the batch's records lose one of their \(QueuePolicy.maxAttempts) attempts; retrying at \(RFC3339.string(from: retryAt))")
        result.outcome = .retryLater(reason: reason, code: nil, at: retryAt)
    }

    /// Writes the pause and retry times for `status` when they changed.
    private func publishState() {
        let now = clock.now()
        let (pause, retry, changed) = state.with { s -> (Date?, Date?, Bool) in
            let pause = s.authPause.isPaused(at: now) ? s.authPause.until : nil
            let retry: Date? = if case .open(let until) = s.breaker.state(at: now) { until } else { nil }
            let changed = pause != s.publishedAuthPause || retry != s.publishedRetryAt
            s.publishedAuthPause = pause
            s.publishedRetryAt = retry
            return (pause, retry, changed)
        }
        guard changed else { return }
        try? store.setState(AgentStateKey.uploadAuthPausedUntil, pause.map(RFC3339.string(from:)))
        try? store.setState(AgentStateKey.uploadRetryAt, retry.map(RFC3339.string(from:)))
    }

    private func logSummary(_ report: SyncReport) {
        guard report.requests > 0 else { return }
        let bytes = report.streams.values.reduce(Int64(0)) { $0 + $1.wireBytes }
        logger.info("upload cycle: \(report.recordsSent) records delivered, \(report.recordsFailed) refused, \(report.requests) requests, \(bytes) bytes")
    }
}
