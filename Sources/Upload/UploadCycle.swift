import AgentCore
import Foundation
import Logging
import Platform

/// What every upload cycle works with: built once by the `Uploader`, handed to each cycle.
struct UploadContext: Sendable {
    let upload: UploadConfig
    let tuning: UploadTuning
    let queue: any UploadStore
    let clock: any WallClock
    let logger: Logger
    let state: UploaderStateBox
    let makeTransport: HTTPTransportFactory
    let random: @Sendable () -> Double
    let isStopping: @Sendable () -> Bool
    /// Called when the endpoint answers again after an outage.
    let recovered: @Sendable () -> Void
    /// Whether the connection is metered now (`Uploader.setMetered`).
    let metered: @Sendable () -> Bool
    /// `[server] endpoint`, which a kept server identity names.
    let endpoint: String
}

/// One pass over the queue: for each stream with pending records, batches bounded by
/// count and bytes are sent one after another over one transport (one connection),
/// and each is marked by the answer. Streams are independent: a stream that must wait
/// is skipped and the others go on; only an endpoint-wide problem (breaker open, token
/// refused, 429, stopping) ends the whole cycle.
///
/// Records become `uploaded` only on the ingest endpoint's proof (`IngestVerdict.accepted`),
/// and `failed` only when the server refused them while it took others of the same stream.
struct UploadCycle {
    let forced: Bool
    let context: UploadContext
    let progress: ((SyncProgress) -> Void)?

    private var transport: (any HTTPTransport)?
    private var settings: ServerSettings
    /// A box's last answer in this cycle: its build and when, written once at the end.
    private var boxLastAnswer: (identity: ServerIdentity?, at: Date)?

    init(forced: Bool, context: UploadContext, progress: ((SyncProgress) -> Void)?) {
        self.forced = forced
        self.context = context
        self.progress = progress
        settings = context.state.with { s in
            var settings = s.settings
            if s.uncompressed { settings.gzip = false }
            return settings
        }
    }

    private var queue: any UploadStore { context.queue }
    private var logger: Logger { context.logger }
    private var clock: any WallClock { context.clock }
    private var state: UploaderStateBox { context.state }
    private var tuning: UploadTuning { context.tuning }

    /// Why a batch did not go through, for the one piece of bookkeeping all failures share.
    private struct Failure {
        enum Kind {
            /// Network, 5xx, 408, not the ingest endpoint: the stream waits by the backoff
            /// schedule and counts towards the endpoint's breaker.
            case outage
            /// 429: the whole endpoint waits (`Retry-After`, else the backoff schedule).
            case rateLimited
            /// 401/403: uploads pause with a growing pause until the token is fixed.
            case unauthorized
            /// An answer that blames the batch without naming a record: one attempt each.
            case blamed
            /// Every record refused while the server took none of the stream: a stream
            /// the server does not know, not bad records. Nothing failed, no attempt used.
            case streamRefused
        }
        var kind: Kind
        var reason: String
        var code: AgentErrorCode?
        var retryAfter: TimeInterval?

        init(_ verdict: IngestVerdict) {
            switch verdict {
            case .retryLater(let reason, let code, let retryAfter):
                self.init(kind: code == .rateLimited ? .rateLimited : .outage, reason: reason, code: code, retryAfter: retryAfter)
            case .unauthorized(let reason):
                self.init(kind: .unauthorized, reason: reason, code: .invalidToken)
            case .appletUnknown(let reason):
                self.init(kind: .unauthorized, reason: "\(reason): \(BoxAnswer.pairAgain)", code: .invalidToken)
            case .blamed(let reason):
                self.init(kind: .blamed, reason: reason)
            case .accepted, .rejected, .partlyAccepted, .cancelled:
                preconditionFailure("not a failure: \(verdict)")
            }
        }

        init(kind: Kind, reason: String, code: AgentErrorCode? = nil, retryAfter: TimeInterval? = nil) {
            self.kind = kind
            self.reason = reason
            self.code = code
            self.retryAfter = retryAfter
        }

        var noted: String { "\(code.map { "\($0.rawValue) " } ?? "")\(reason)" }
    }

    /// What sending a batch, with the halves it was split into, came to.
    private enum Sent {
        /// The server answered every record: `accepted` stored, `refused` refused one by one
        /// (not yet marked: whether they are bad depends on whether the stream works at all).
        case answered(accepted: Int, refused: [(record: QueuedRecord, reason: String)])
        case failed(Failure)
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
            streams = try queue.streamsWithPending()
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
        publishBoxAnswer()
        transport = nil
        publishState()
        report.finishedAt = clock.now()
        logSummary(report)
        return report
    }

    /// Why this cycle may not send anything at all.
    private func gate(at now: Date) -> SyncReport.Skip? {
        if context.isStopping() { return .stopped }
        if let problem = settings.configurationProblem { return .notConfigured(reason: problem) }
        guard !forced else { return nil }
        return state.with { $0.endpointWait(at: now)?.why }
    }

    /// Sends `stream`'s pending records batch by batch. Returns true when the whole
    /// cycle must end (the endpoint is failing, the token was refused, stopping).
    private mutating func runStream(_ stream: StreamName, into result: inout SyncReport.StreamResult) -> Bool {
        if !MeteredUploadRule.mayGo(stream, onMetered: context.upload.onMetered, metered: context.metered(), forced: forced) {
            // It waits in the queue; the switch to an unmetered connection runs a cycle at once.
            result.outcome = .deferredOnMeteredNetwork
            return false
        }
        if !forced, let wait = state.with({ $0.streamWait(stream, at: clock.now()) }) {
            result.outcome = .waiting(until: wait)
            return false
        }
        let totals = (try? queue.pendingTotals(stream: stream)) ?? (records: 0, bytes: 0)
        var progress = SyncProgress(stream: stream, recordsTotal: totals.records, bytesTotal: totals.bytes,
                                    recordsSent: 0, bytesSent: 0, recordsFailed: 0)
        self.progress?(progress)

        while true {
            if context.isStopping() { return true }
            let probe = !forced && state.with { $0.memory.breaker.state(at: clock.now()) == .halfOpen }
            let maxRecords = probe ? min(tuning.probeMaxRecords, context.upload.batchMaxRecords) : context.upload.batchMaxRecords
            let maxBody = probe ? min(tuning.probeMaxBytes, context.upload.batchMaxBytes) : context.upload.batchMaxBytes
            let batch: [QueuedRecord]
            do {
                batch = try queue.pendingBatch(stream: stream, maxCount: maxRecords,
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

            var sent = send(batch[...], stream: stream, result: &result, progress: &progress)
            if case .answered(0, let refused) = sent, !refused.isEmpty {
                sent = judgeWholeRefusal(refused, stream: stream, result: &result, progress: &progress)
            }
            switch sent {
            case .answered(_, let refused):
                if let problem = markRefused(refused, result: &result, progress: &progress) {
                    result.outcome = .storeError(reason: problem)
                    return false
                }
            case .cancelled:
                return true
            case .storeError(let reason):
                result.outcome = .storeError(reason: reason)
                return false
            case .failed(let failure):
                return fail(stream, batch, failure, result: &result)
            }
        }
    }

    /// Sends `records` as one request and acts on the answer; the records of a batch the
    /// server refused, in part or whole, are sent again as `RefusalPlan` says, until the
    /// refused records stand alone.
    private mutating func send(_ records: ArraySlice<QueuedRecord>, stream: StreamName,
                               result: inout SyncReport.StreamResult, progress: inout SyncProgress) -> Sent {
        let batch = Array(records)
        let batchID = BatchID.make(stream: stream, recordIDs: batch.map(\.id))
        let body = IngestBody.build(stream: stream, deviceID: settings.deviceID, records: batch,
                                    batchID: batchID, timestamp: clock.now(), box: settings.box)
        let compressed: HTTPRequest
        do {
            compressed = try IngestBody.request(settings: settings, body: body, batchID: batchID)
            if transport == nil { transport = try context.makeTransport(settings, context.isStopping) }
        } catch let failure as TransportFailure {
            // A box's transport connects as it starts: its refusal is an answer like any other.
            let verdict = settings.box == nil ? IngestVerdict.of(.failure(failure), sent: batch.count, now: clock.now())
                : BoxAnswer.verdict(.failure(failure), sent: batch.count, now: clock.now())
            if case .cancelled = verdict { return .cancelled }
            return .failed(Failure(verdict))
        } catch {
            return .failed(Failure(kind: .outage, reason: "\(error)"))
        }
        guard let transport else { return .cancelled }
        do {
            try queue.noteSending(stream: stream)
        } catch {
            // Sent now, the records could not be marked delivered afterwards and would be
            // sent again: wait until the queue takes writes (the storage guard makes room).
            logger.error("not sending \(batch.count) \(stream.rawValue) records: the queue cannot record their delivery: \(error)")
            return .storeError("\(error)")
        }
        result.requests += 1
        var request = compressed
        var answer = transport.send(request)
        if let plain = uncompressedRetry(after: answer, body: body, batchID: batchID, stream: stream) {
            // Never a refusal, never a split: the same batch once more, uncompressed.
            result.requests += 1
            request = plain
            answer = transport.send(plain)
            noteUncompressedAnswer(answer)
        } else if settings.gzip, case .success(let response) = answer, (200..<300).contains(response.status) {
            gzipWasRead()
        }
        var verdict = settings.box == nil ? IngestVerdict.of(answer, sent: batch.count, now: clock.now())
            : BoxAnswer.verdict(answer, sent: batch.count, now: clock.now())
        if settings.box != nil { boxAnswered(answer) }
        if case .appletUnknown(let reason) = verdict {
            // Once per batch: the box's current applet for this device, then the same batch again.
            guard let applet = askCurrentApplet(after: reason) else {
                return .failed(Failure(kind: .unauthorized, reason: "\(reason); the box names no other ingest applet for this device: \(BoxAnswer.pairAgain)",
                                       code: .invalidToken))
            }
            request.url = settings.ingestURL
            result.requests += 1
            logger.notice("the box moved this device's ingest applet to \(applet): sending the batch there")
            answer = transport.send(request)
            boxAnswered(answer)
            verdict = BoxAnswer.verdict(answer, sent: batch.count, now: clock.now())
            if case .appletUnknown(let again) = verdict {
                return .failed(Failure(kind: .unauthorized, reason: "\(again), also at the applet it named: \(BoxAnswer.pairAgain)", code: .invalidToken))
            }
        }
        logger.debug("batch \(batchID.uuidString.lowercased()) of \(batch.count) \(stream.rawValue) records (\(body.count) bytes): \(verdict)")

        switch verdict {
        case .accepted:
            if let problem = delivered(batch, stream: stream, requestBytes: request.body.count, result: &result, progress: &progress) {
                return .storeError(problem)
            }
            endpointAnswered(stream: stream, tookRecords: true)
            return .answered(accepted: batch.count, refused: [])

        case .rejected(let reason, let named):
            endpointAnswered(stream: stream, tookRecords: false)
            guard batch.count > 1 else { return .answered(accepted: 0, refused: [(batch[0], reason)]) }
            return resend(records, as: .refused(batch, named: named), reason: reason, stream: stream,
                          requestBytes: request.body.count, result: &result, progress: &progress)

        case .partlyAccepted(let accepted, let rejected, let reason, let named):
            endpointAnswered(stream: stream, tookRecords: true)
            // One record both accepted and rejected proves nothing: it was refused alone.
            guard batch.count > 1 else { return .answered(accepted: 0, refused: [(batch[0], reason)]) }
            return resend(records, as: .partlyAccepted(batch, accepted: accepted, rejected: rejected, named: named),
                          reason: reason, stream: stream, requestBytes: request.body.count, result: &result, progress: &progress)

        case .cancelled:
            return .cancelled
        case .retryLater, .unauthorized, .blamed, .appletUnknown:
            return .failed(Failure(verdict))
        }
    }

    /// A Virtues box answered (anything): its build (every answer names it), kept for the
    /// end of the cycle.
    private mutating func boxAnswered(_ answer: Result<HTTPResponse, TransportFailure>) {
        guard case .success(let response) = answer else { return }
        let now = clock.now()
        var identity = response.headers[ServerIdentity.boxBuildHeader].flatMap { ServerIdentity.box(buildHeader: $0, at: now) }
        identity?.endpoint = context.endpoint
        boxLastAnswer = (identity ?? boxLastAnswer?.identity, now)
    }

    /// The box's build and how it was reached, for `status`: written once a cycle (two
    /// small writes), not at each answer.
    private func publishBoxAnswer() {
        guard let answer = boxLastAnswer else { return }
        if let identity = answer.identity {
            try? queue.setState(AgentStateKey.serverIdentity, try? AgentStateStore.jsonText(identity))
        }
        if let box = transport as? BoxTransport {
            try? queue.setState(AgentStateKey.boxReach, try? AgentStateStore.jsonText(BoxReach(path: box.bridge.path, answeredAt: answer.at)))
        }
    }

    /// After a 404 from the box: `GET /api/devices/applet-ids` for this device's current
    /// ingest applet. A new one is used from now on (kept in the queue database for this
    /// box, so a restart keeps it); nil when the box names none or the same one.
    private mutating func askCurrentApplet(after reason: String) -> String? {
        guard var box = settings.box, let transport else { return nil }
        logger.warning("\(reason): asking the box for this device's current applet")
        let answer = transport.send(.get(url: BoxConfig.url(path: BoxAnswer.appletIDsPath), headers: []))
        boxAnswered(answer)
        guard case .success(let response) = answer, (200..<300).contains(response.status),
              let applet = BoxAnswer.ingestApplet(in: response.body), applet != box.appletID else { return nil }
        box.appletID = applet
        settings.box = box
        settings.ingestURL = BoxConfig.url(path: "/webhook/\(applet)")
        let kept = settings
        state.with { $0.settings.box = kept.box; $0.settings.ingestURL = kept.ingestURL }
        try? queue.setState(AgentStateKey.boxApplet, "\(box.nodeID) \(box.pairing) \(applet)")
        return applet
    }

    /// The same batch uncompressed, when a gzip body was answered 400 or 415: neither server
    /// inflates bodies, and a proxy that would is missing (docs/upload.md#gzip). Nil when
    /// the body was not compressed or the answer was another.
    private func uncompressedRetry(after answer: Result<HTTPResponse, TransportFailure>, body: RequestBody,
                                   batchID: UUID, stream: StreamName) -> HTTPRequest? {
        guard settings.gzip, case .success(let response) = answer, [400, 415].contains(response.status) else { return nil }
        var plain = settings
        plain.gzip = false
        guard let retry = try? IngestBody.request(settings: plain, body: body, batchID: batchID) else { return nil }
        logger.notice("the server answered a gzip body of \(stream.rawValue) records HTTP \(response.status) (\(IngestVerdict.serverMessage(response))): sending the same batch once more uncompressed")
        return retry
    }

    /// The uncompressed retry was read (any answer but 400/415): the server does not
    /// inflate bodies, so the rest of this process sends them uncompressed, and `status` says so.
    private mutating func noteUncompressedAnswer(_ answer: Result<HTTPResponse, TransportFailure>) {
        guard case .success(let response) = answer, ![400, 415].contains(response.status) else { return }
        settings.gzip = false
        state.with {
            $0.uncompressed = true
            $0.uncompressedNoted = true
        }
        try? queue.setState(AgentStateKey.uploadPlainBodiesSince, RFC3339.string(from: clock.now()))
        logger.warning("the server does not inflate gzip bodies (it read the batch uncompressed): uploads go uncompressed from now on; set [server] gzip = false, or put a proxy that inflates bodies in front of the server (a reload tries gzip again)")
    }

    /// A gzip body was answered 2xx: bodies are inflated now (a proxy was put in
    /// front), so `status` no longer says they are not.
    private func gzipWasRead() {
        let noted = state.with { s -> Bool in
            defer { s.uncompressedNoted = false }
            return s.uncompressedNoted
        }
        if noted { try? queue.setState(AgentStateKey.uploadPlainBodiesSince, nil) }
    }

    /// Sends the records of a refused batch again as `plan` says (after marking what the
    /// answer proved stored) and adds up what became of them.
    private mutating func resend(_ records: ArraySlice<QueuedRecord>, as plan: RefusalPlan, reason: String, stream: StreamName,
                                 requestBytes: Int, result: inout SyncReport.StreamResult, progress: inout SyncProgress) -> Sent {
        let what = "the server refused a batch of \(records.count) \(stream.rawValue) records (\(reason))"
        var accepted = 0
        let groups: [ArraySlice<QueuedRecord>]
        switch plan {
        case .halves:
            logger.notice("\(what): splitting it to find the bad records")
            let middle = records.startIndex + records.count / 2
            groups = [records[..<middle], records[middle...]]
        case .namedAloneFirst(let named, let others):
            logger.notice("\(what): sending the \(named.count) it names alone, then the other \(others.count)")
            groups = named.map { [$0][...] } + (others.isEmpty ? [] : [others[...]])
        case .storedExceptNamed(let stored, let named):
            logger.notice("\(what): the other \(stored.count) are stored; sending the \(named.count) it names alone")
            if let problem = delivered(stored, stream: stream, requestBytes: requestBytes, result: &result, progress: &progress) {
                return .storeError(problem)
            }
            accepted = stored.count
            groups = named.map { [$0][...] }
        case .eachAlone:
            logger.notice("\(what) without naming them: sending each record alone (the server may get those it stored again; it keeps each record once by id)")
            groups = records.map { [$0][...] }
        }
        var refused: [(record: QueuedRecord, reason: String)] = []
        for group in groups {
            let outcome = send(group, stream: stream, result: &result, progress: &progress)
            guard case .answered(let a, let r) = outcome else { return outcome }
            accepted += a
            refused += r
        }
        return .answered(accepted: accepted, refused: refused)
    }

    /// The server proved `records` stored: marked delivered, counted. Returns a problem
    /// when the queue cannot mark them.
    private func delivered(_ records: [QueuedRecord], stream: StreamName, requestBytes: Int,
                           result: inout SyncReport.StreamResult, progress: inout SyncProgress) -> String? {
        guard !records.isEmpty else { return nil }
        do {
            try queue.markDelivered(records.map(\.seq), stream: stream, result: "delivered \(records.count) records",
                                    bytes: requestBytes)
        } catch {
            // The server has them; left pending they are sent again and the server
            // keeps each record once by its id.
            logger.error("delivered \(records.count) \(stream.rawValue) records but cannot mark them: \(error)")
            return "\(error)"
        }
        let payloadBytes = Int64(records.reduce(0) { $0 + $1.payload.count })
        result.recordsSent += records.count
        result.bytesSent += payloadBytes
        result.wireBytes += Int64(requestBytes)
        progress.recordsSent += records.count
        progress.bytesSent += payloadBytes
        self.progress?(progress)
        return nil
    }

    /// Every record of a batch was refused, one by one. Bad records, or a stream the
    /// server does not take at all (an unknown stream name answers exactly so)? The
    /// stream's newest record, sent alone, tells them apart: if the server takes it, the
    /// refused ones are bad; if it refuses that too, the stream is refused.
    private mutating func judgeWholeRefusal(_ refused: [(record: QueuedRecord, reason: String)], stream: StreamName,
                                            result: inout SyncReport.StreamResult, progress: inout SyncProgress) -> Sent {
        let refusedSeqs = Set(refused.map(\.record.seq))
        let newest: QueuedRecord?
        do {
            newest = try queue.newestPending(stream: stream)
        } catch {
            return .storeError("\(error)")
        }
        if let newest, !refusedSeqs.contains(newest.seq) {
            switch send([newest][...], stream: stream, result: &result, progress: &progress) {
            case .answered(1, _):
                return .answered(accepted: 0, refused: refused)
            case .answered:
                break
            case let other:
                return other
            }
        }
        let reason = "the server refuses every \(stream.rawValue) record (\(refused.count) sent, none taken; it said: \(refused[0].reason)): "
            + "check the server version and its stream names (this one is sent as \"\(stream.wireName)\")"
        return .failed(Failure(kind: .streamRefused, reason: reason, code: .streamRefused))
    }

    /// Records the server refused while it took others of the stream: failed for good, with its reason.
    private func markRefused(_ refused: [(record: QueuedRecord, reason: String)], result: inout SyncReport.StreamResult,
                             progress: inout SyncProgress) -> String? {
        for (record, reason) in refused {
            let id = record.id.uuidString.lowercased()
            logger.error("the server refuses \(record.stream.rawValue) record \(id) (queue seq \(record.seq)): \(reason); it is marked failed and will not be sent again")
            do {
                try queue.markFailed([record.seq], error: reason)
                try queue.recordUploadResult(stream: record.stream, success: false, result: "record \(id) refused: \(reason)",
                                             code: nil, records: 0, bytes: 0)
            } catch {
                logger.error("cannot mark record \(id) failed: \(error)")
                return "\(error)"
            }
            result.recordsFailed += 1
            progress.recordsFailed += 1
        }
        if !refused.isEmpty { self.progress?(progress) }
        return nil
    }

    /// The endpoint answered as an ingest endpoint: it is up and the token is good; and
    /// when it stored records of `stream`, it takes that stream.
    private func endpointAnswered(stream: StreamName, tookRecords: Bool) {
        let afterOutage = state.with { s -> Bool in
            defer { s.sawOutage = false }
            return s.sawOutage
        }
        if afterOutage { context.recovered() }
        state.with { s in
            if tookRecords { s.memory.refusals[stream.rawValue] = nil }
            s.memory.breaker.recordSuccess()
            s.memory.retries[stream.rawValue] = nil
            s.memory.authPause.clear()
            s.memory.rateLimitWait = nil
            s.memory.lastFailure = nil
        }
    }

    /// The bookkeeping every failure shares: the records keep their place (only `blamed`
    /// uses attempts), `status` hears of it, the right wait is set, one log line says why.
    /// Returns true when the whole cycle must end.
    private func fail(_ stream: StreamName, _ batch: [QueuedRecord], _ failure: Failure,
                      result: inout SyncReport.StreamResult) -> Bool {
        let now = clock.now()
        let seqs = batch.map(\.seq)
        if failure.kind == .blamed {
            try? queue.recordFailedAttempt(seqs, error: failure.noted)
        } else {
            try? queue.noteAttempt(seqs, error: failure.noted)
        }
        try? queue.recordUploadResult(stream: stream, success: false, result: failure.noted, code: failure.code, records: 0, bytes: 0)

        let random = context.random
        let (until, endsCycle) = state.with { s -> (Date, Bool) in
            switch failure.kind {
            case .unauthorized:
                s.memory.lastFailure = .init(reason: failure.reason, code: failure.code)
                return (s.memory.authPause.refused(at: now), true)
            case .rateLimited:
                var count = s.memory.rateLimitWait?.count ?? RetryCounter()
                let until = now.addingTimeInterval(count.failed(backoff: tuning.backoff, retryAfter: failure.retryAfter, random: random()))
                s.memory.rateLimitWait = RateLimitWait(until: until, count: count, reason: failure.reason)
                s.memory.lastFailure = .init(reason: failure.reason, code: failure.code)
                return (until, true)
            case .streamRefused:
                var pause = s.memory.refusals[stream.rawValue] ?? tuning.newStreamRefusal()
                let until = pause.refused(at: now)
                s.memory.refusals[stream.rawValue] = pause
                return (until, false)
            case .blamed, .outage:
                var retry = s.retry(stream) ?? RetryState()
                retry.failed(at: now, reason: failure.reason, code: failure.code, retryAfter: failure.retryAfter,
                             schedule: tuning.backoff, random: random())
                s.memory.retries[stream.rawValue] = retry
                guard failure.kind == .outage else { return (retry.nextAttemptAt ?? now, false) }
                s.sawOutage = true
                s.memory.breaker.recordFailure(at: now, retryAfter: failure.retryAfter, schedule: tuning.backoff, random: random())
                s.memory.lastFailure = .init(reason: failure.reason, code: failure.code)
                guard case .open(let until) = s.memory.breaker.state(at: now) else { return (retry.nextAttemptAt ?? now, false) }
                // The endpoint as a whole is failing: the breaker alone says when to try
                // again (its probe goes to whichever stream has records), so the streams'
                // own waits, drawn with other jitter, must not hold the probe back.
                s.memory.retries = s.memory.retries.filter { $0.value.serverAsked }
                return (until, true)
            }
        }

        let at = RFC3339.string(from: until)
        switch failure.kind {
        case .unauthorized:
            logger.error("E002 \(failure.reason); uploads paused until \(at), nothing is dropped")
            result.outcome = .unauthorized(reason: failure.reason, until: until)
        case .rateLimited:
            logger.warning("\(failure.noted): no uploads to this endpoint, of any stream, until \(at)")
            result.outcome = .retryLater(reason: failure.reason, code: failure.code, at: until)
        case .streamRefused:
            logger.error("\(failure.noted); the records stay queued (none failed, no attempt used); \(stream.rawValue) uploads pause until \(at)")
            result.outcome = .retryLater(reason: failure.reason, code: failure.code, at: until)
        case .blamed:
            logger.warning("\(stream.rawValue): \(failure.reason); the batch's records lose one of their \(QueuePolicy.maxAttempts) attempts; retrying at \(at)")
            result.outcome = .retryLater(reason: failure.reason, code: nil, at: until)
        case .outage:
            if endsCycle {
                logger.warning("\(failure.noted): the endpoint is failing; no uploads until \(at)")
            } else {
                logger.warning("\(stream.rawValue): \(failure.noted); retrying at \(at)")
            }
            result.outcome = .retryLater(reason: failure.reason, code: failure.code, at: until)
        }
        return endsCycle
    }

    /// Writes what decides the next attempt to the queue database when it changed: the
    /// whole memory (read back after a restart) and the two times `status` shows.
    private func publishState() {
        let now = clock.now()
        let snapshot = state.with { s -> (memory: UploaderMemory, pause: Date?, retry: Date?)? in
            guard s.published != s.memory else { return nil }
            s.published = s.memory
            let pause = s.memory.authPause.isPaused(at: now) ? s.memory.authPause.until : nil
            let wait = s.endpointWait(at: now)
            return (s.memory, pause, wait.flatMap { pause == nil ? $0.until : nil })
        }
        guard let snapshot else { return }
        try? queue.setState(AgentStateKey.uploadMemory, snapshot.memory.isEmpty ? nil : snapshot.memory.encoded())
        try? queue.setState(AgentStateKey.uploadAuthPausedUntil, snapshot.pause.map(RFC3339.string(from:)))
        try? queue.setState(AgentStateKey.uploadRetryAt, snapshot.retry.map(RFC3339.string(from:)))
    }

    private func logSummary(_ report: SyncReport) {
        guard report.requests > 0 else { return }
        let bytes = report.streams.values.reduce(Int64(0)) { $0 + $1.wireBytes }
        logger.info("upload cycle: \(report.recordsSent) records delivered, \(report.recordsFailed) refused, \(report.requests) requests, \(bytes) bytes")
    }
}
