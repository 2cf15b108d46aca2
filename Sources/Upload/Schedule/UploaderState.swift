import AgentCore
import Foundation
import Synchronization

/// The wait the whole endpoint owes after a 429: every stream waits, not only the one
/// that was told to slow down.
struct RateLimitWait: Sendable, Equatable, Codable {
    var until: Date
    /// 429s in a row: without a `Retry-After`, the backoff schedule's step for this count.
    var count: RetryCounter
    var reason: String
}

/// What the uploader remembers between cycles, and across restarts: the part that decides
/// when it may send again. Kept in `agent_state` (`AgentStateKey.uploadMemory`) so that a
/// restart, or a crash loop under systemd's `Restart=`, does not hammer a failing server.
struct UploaderMemory: Sendable, Equatable, Codable {
    /// Which endpoint and token this is about (a fingerprint, never the token): a memory of
    /// another server, or of a token since replaced, is not read back.
    var server: String
    /// Per stream (by the agent's stream name).
    var retries: [String: RetryState] = [:]
    var refusals: [String: GrowingPause] = [:]
    var breaker: CircuitBreaker
    var authPause: GrowingPause
    var rateLimitWait: RateLimitWait?
    /// The last failure that did not blame the records, for `liveness()`.
    var lastFailure: LastFailure?

    // Stored under the names it had before (`hold`), so a restart after an upgrade reads it.
    private enum CodingKeys: String, CodingKey {
        case server, retries, refusals, breaker, authPause, rateLimitWait = "hold", lastFailure
    }

    struct LastFailure: Sendable, Equatable, Codable {
        var reason: String
        var code: AgentErrorCode?
    }

    init(tuning: UploadTuning, server: String) {
        self.server = server
        breaker = CircuitBreaker(threshold: tuning.breakerThreshold)
        authPause = tuning.newAuthPause()
    }

    var isEmpty: Bool {
        retries.isEmpty && refusals.isEmpty && rateLimitWait == nil && lastFailure == nil && breaker.openUntil == nil
            && breaker.consecutiveFailures == 0 && authPause.refusals == 0
    }

    /// Read back from the queue database: the policy's numbers win over the stored ones,
    /// and no wait ends later than `now + tuning.longestRestoredWait`.
    static func restore(from text: String?, server: String, tuning: UploadTuning, now: Date) -> UploaderMemory? {
        guard let data = text?.data(using: .utf8),
              var memory = try? JSONDecoder().decode(UploaderMemory.self, from: data),
              memory.server == server else { return nil }
        let latest = now.addingTimeInterval(tuning.longestRestoredWait)
        memory.authPause.schedule = tuning.authPause
        memory.authPause.limit(endingBy: latest)
        memory.breaker.limit(endingBy: latest)
        for key in memory.refusals.keys {
            memory.refusals[key]?.schedule = tuning.streamRefusal
            memory.refusals[key]?.limit(endingBy: latest)
        }
        for (key, retry) in memory.retries {
            if let next = retry.nextAttemptAt, next > latest { memory.retries[key]?.nextAttemptAt = latest }
        }
        if let hold = memory.rateLimitWait, hold.until > latest { memory.rateLimitWait?.until = latest }
        return memory
    }

    /// The fingerprint of an endpoint and token: 8 bytes of SHA-1, enough to notice a change.
    static func fingerprint(_ settings: ServerSettings) -> String {
        // A box: its key and when it paired stand for the token (pairing again starts afresh).
        let credential = settings.box.map { "\($0.nodeID)\u{0}\($0.key.value)\u{0}\($0.pairedAt)" } ?? settings.token.value
        let digest = BatchID.sha1(Array("\(settings.ingestURL)\u{0}\(credential)".utf8))
        return digest.prefix(8).lowercaseHex
    }

    func encoded() -> String? {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// The uploader's state between cycles. Guarded by `UploaderStateBox`'s lock; cycles and
/// `liveness()` hold it only for short reads and updates, never across a request.
struct UploaderState: Sendable {
    var settings: ServerSettings
    var memory: UploaderMemory
    /// What was last written to `agent_state`, so unchanged values are not rewritten.
    var published: UploaderMemory?
    /// The endpoint failed (network, 5xx) since it last answered; a network return that
    /// forgets the backoff does not clear it, the next answer does.
    var sawOutage = false
    /// The server read a batch uncompressed after refusing it gzipped: bodies go
    /// uncompressed for the rest of the process (docs/upload.md#gzip).
    var uncompressed = false
    /// `AgentStateKey.uploadPlainBodiesSince` is set (by this process or the last one).
    var uncompressedNoted = false

    func retry(_ stream: StreamName) -> RetryState? { memory.retries[stream.rawValue] }

    /// When an endpoint-wide wait (token pause, 429 hold, open breaker) ends, nil when none.
    func endpointWait(at now: Date) -> (until: Date, why: SyncReport.Skip)? {
        if memory.authPause.isPaused(at: now), let until = memory.authPause.until { return (until, .authPaused(until: until)) }
        if let hold = memory.rateLimitWait, now < hold.until { return (hold.until, .rateLimited(until: hold.until)) }
        if case .open(let until) = memory.breaker.state(at: now) { return (until, .circuitOpen(until: until)) }
        return nil
    }

    /// When `stream` may send again by itself, nil when it may now.
    func streamWait(_ stream: StreamName, at now: Date) -> Date? {
        let waits = [memory.retries[stream.rawValue]?.nextAttemptAt,
                     memory.refusals[stream.rawValue].flatMap { $0.isPaused(at: now) ? $0.until : nil }]
        return waits.compactMap { $0 }.filter { $0 > now }.max()
    }

    /// The network came back (or the machine resumed): the failures it caused say nothing
    /// about the server any more. The server's own words stay: a token pause, a 429 hold, a
    /// `Retry-After`, a refused stream.
    mutating func forgetNetworkFailures(tuning: UploadTuning) {
        memory.breaker = CircuitBreaker(threshold: tuning.breakerThreshold)
        memory.retries = memory.retries.filter { $0.value.serverAsked }
        memory.lastFailure = nil
    }
}

final class UploaderStateBox: Sendable {
    let lock: Mutex<UploaderState>

    init(_ state: UploaderState) {
        lock = Mutex(state)
    }

    func with<T>(_ body: (inout UploaderState) -> T) -> T {
        lock.withLock { body(&$0) }
    }
}
