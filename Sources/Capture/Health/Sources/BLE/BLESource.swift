import AgentCore
import DBus
import Foundation
import Logging
import Platform
import Synchronization

/// Heart rate and heart-rate variability from a Bluetooth LE sensor (a chest strap, an
/// arm band, a watch broadcasting heart rate) through BlueZ. Its thread opens a
/// `BlueZSensorSession`, sleeps until notifications are handed over from the bus thread,
/// turns them into windows (`BeatWindows`) and commits each window's sample when the
/// window closes; when the sensor goes away it opens a session again with backoff.
///
/// Exactly once: a sample is made only when its window closes and is committed once;
/// nothing is carried across a restart. At a stop the open windows are closed by the
/// same rules (a heart-rate window with any reading is sent, a variability window only
/// with enough clean beats), so a window is sent at most once. A crash loses the open
/// windows and at most `commitDelay` of closed ones (docs/streams/health.md#bluetooth-le-sensors).
public final class BLESource: HealthSource, @unchecked Sendable {
    // @unchecked: `counters`, `inbox` and `battery` are shared with other threads behind
    // locks; every var is touched only by the thread inside run().
    public let name: String
    let config: BLESourceSettings
    /// The sensor looked for: the configured address, or the one it was last found under
    /// by its advertised name (kept in the agent's state, `AgentStateKey.bleAdoptedAddress`).
    private var target: BLESensorTarget
    private let agentState: AgentStateStore?
    let tuning: BLETuning
    let clock: any WallClock
    let clockTrust: ClockTrust
    let logger: Logger

    private let counters: HealthSourceCounters
    private let inbox = NotificationInbox()
    private let doorbell: Doorbell?
    /// What BlueZ last saw of the sensor while it was away (set on the bus thread).
    private let seen = Mutex<String?>(nil)
    private var committer: HealthCommitter
    private var windows: BeatWindows
    private var log: RateLimitedLog
    private var fallbackLogged = false
    private let normaliser = HealthNormaliser()
    /// Below this the battery is warned about in status and the log.
    public static let lowBattery = SensorStatus.lowBattery
    private static let maxHeld = 50_000

    /// - Parameters:
    ///   - heartRateSeconds: one heart-rate sample per this many seconds (`[health] ble_heart_rate_seconds`).
    ///   - hrvWindowSeconds: one variability sample per this many seconds (`[health] hrv_window_seconds`).
    public init(config: BLESourceSettings, heartRateSeconds: Int = 5, hrvWindowSeconds: Int = 300, queue: any RecordSink,
                commitInterval: TimeInterval = 300, tuning: BLETuning = BLETuning(), clock: any WallClock = SystemClock(),
                clockTrust: ClockTrust = .live(trustSystemClock: false), agentState: AgentStateStore? = nil, logger: Logger) {
        name = config.name
        self.config = config
        self.agentState = agentState
        let adopted = config.address == nil ? nil : (try? agentState?.value(AgentStateKey.bleAdoptedAddress(source: config.name))) ?? nil
        target = BLESensorTarget(config, adoptedAddress: adopted)
        self.tuning = tuning
        self.clock = clock
        self.clockTrust = clockTrust
        self.logger = logger
        var kindStatus = BLESourceStatus()
        kindStatus.address = adopted ?? config.address
        kindStatus.adoptedAddress = adopted
        let counters = HealthSourceCounters(name: config.name, kind: .ble, kindStatus: kindStatus)
        self.counters = counters
        doorbell = try? Doorbell()
        committer = HealthCommitter(queue: queue, interval: min(commitInterval, tuning.commitDelay), batchSize: 500,
                                    holdAtMost: Self.maxHeld, path: "Bluetooth sensor \(target)", sourceName: config.name,
                                    counters: counters, logger: logger)
        windows = BeatWindows(heartRateSeconds: TimeInterval(heartRateSeconds), hrvSeconds: TimeInterval(hrvWindowSeconds))
        log = RateLimitedLog(logger: logger)
    }

    public func status() -> HealthSourceStatus { counters.snapshot() }

    public func run(until stop: Waker) {
        guard let doorbell else {
            counters.update { $0.liveness = .unhealthy(reason: "cannot make the Bluetooth source's wake-up descriptor") }
            return
        }
        var session: BlueZSensorSession?
        var failures = RetryCounter()
        var retryAt: TimeInterval = 0
        var lastAttempt: TimeInterval = -.infinity
        var lastProblem: BlueZProblem?
        var away = AwayWatch(tuning: tuning)
        var silence = SilenceWatch(limit: tuning.silenceLimit)
        defer {
            away.end()
            session?.close(disconnect: true)
        }
        while !stop.isWoken {
            if session == nil, Monotonic.now >= retryAt {
                lastAttempt = Monotonic.now
                do {
                    // While BlueZ's advertisement monitor watches, BlueZ makes the strap's
                    // object the moment it advertises: an attempt has nothing to discover.
                    let opened = try open(stop: stop, doorbell: doorbell, discover: away.watchedBy != .advertisementMonitor)
                    session = opened
                    failures.succeeded()
                    lastProblem = nil
                    away.end()
                    silence.connected(at: Monotonic.now)
                    adoptIfMoved(opened)
                } catch {
                    if stop.isWoken { break }
                    retryAt = Monotonic.now + failures.failed(backoff: tuning.reconnect)
                    report(error, previous: lastProblem)
                    lastProblem = error
                }
            }
            if session == nil {
                away.begin(target: target, onSeen: sawSensor, onMonitorGone: { [doorbell] in doorbell.ring() })
                noteAwayWatch(away)
            }
            let now = Monotonic.now
            var timeout: TimeInterval? = session == nil ? max(0, retryAt - now) : nil
            for due in [windows.deadline, committer.dueAt, session == nil ? away.nextChange : silence.deadline].compactMap({ $0 }) {
                timeout = min(timeout ?? .infinity, max(0, due - now))
            }
            var fds = [stop.fd, doorbell.fd]
            if let session { fds.append(session.ended.fd) }
            _ = Poll.wait(fds, timeout: timeout)
            counters.update { $0.wakeups += 1 }
            doorbell.clear()
            take(windows.close(at: Monotonic.now))
            let notifications = inbox.takeAll()
            for (bytes, receipt) in notifications {
                measured(bytes, receipt)
            }
            if session != nil {
                if !notifications.isEmpty, silence.heard(at: Monotonic.now) {
                    counters.update(BLESourceStatus.self) { status, ble in
                        status.liveness = .healthy
                        ble.silent = false
                    }
                    logger.notice("health source \(name): heart-rate sensor \(target) notifies again")
                }
                if silence.isOverdue(at: Monotonic.now), let address = session?.deviceAddress ?? target.address {
                    silence.reported()
                    let problem = BlueZProblem.silent(target, address: address, seconds: Int(tuning.silenceLimit))
                    report(problem, previous: nil)
                }
            }
            if let seenWhat = seen.withLock({ s -> String? in defer { s = nil }; return s }), session == nil {
                // Taken at once, but never sooner than the first step after the last try:
                // a sensor that advertises and still refuses does not make a loop.
                let soonest = lastAttempt + tuning.reconnect.base
                if retryAt > soonest {
                    logger.info("health source \(name): heart-rate sensor \(target): \(seenWhat); connecting")
                    retryAt = max(Monotonic.now, soonest)
                }
            }
            away.tick(at: Monotonic.now)
            if let current = session, current.ended.isWoken {
                let problem = current.endedBy ?? .disconnected(target)
                current.close(disconnect: false)
                session = nil
                windows.gap()
                failures = RetryCounter(failures: 1)
                retryAt = Monotonic.now + failures.delay(from: tuning.reconnect)
                counters.update(BLESourceStatus.self) { $1.disconnectedSince = clock.now() }
                report(problem, previous: nil)
                lastProblem = problem
            }
            if committer.isDue || committer.isFull(backlog: false) { _ = committer.commit { nil } }
        }
        for (bytes, receipt) in inbox.takeAll() {
            measured(bytes, receipt)
        }
        take(windows.closeAll())
        _ = committer.commit { nil }
    }

    /// On the bus thread: BlueZ saw the sensor while it was away.
    private var sawSensor: @Sendable (String) -> Void {
        { [weak self] what in
            self?.seen.withLock { $0 = what }
            self?.doorbell?.ring()
        }
    }

    /// How the away sensor is watched, in its status; the fallback to discoveries is
    /// logged once per source (docs/streams/health.md#while-a-strap-is-away).
    private func noteAwayWatch(_ away: AwayWatch) {
        guard let watchedBy = away.watchedBy,
              counters.snapshot().kindStatus(BLESourceStatus.self)?.awayWatch != watchedBy else { return }
        counters.update(BLESourceStatus.self) { $1.awayWatch = watchedBy }
        guard watchedBy == .discovery, !fallbackLogged else { return }
        fallbackLogged = true
        let why = away.monitorUnavailable ?? "BlueZ let the advertisement monitor go"
        logger.notice("health source \(name): \(why); while the sensor is away it is looked for by a \(Int(tuning.scanSeconds)) s discovery every \(Int(tuning.awayScanEvery)) s")
    }

    /// The sensor was found by its advertised name under another address than the one
    /// looked for: that address is adopted (kept in the agent's state, shown in `status`,
    /// logged), the config is left as the person wrote it.
    private func adoptIfMoved(_ session: BlueZSensorSession) {
        guard let previous = target.address, let found = session.deviceAddress, found != previous else { return }
        target.address = found
        let adopted = found == config.address ? nil : found
        do {
            try agentState?.set(AgentStateKey.bleAdoptedAddress(source: name), adopted)
        } catch {
            logger.warning("health source \(name): cannot keep the sensor's new address \(found) in the agent's state (\(error)); it is looked for by its name again after a restart")
        }
        counters.update(BLESourceStatus.self) { _, ble in
            ble.address = found
            ble.adoptedAddress = adopted
        }
        logger.notice("health source \(name): heart-rate sensor \"\(target.name ?? "")\" found under a new address \(found) (was \(previous)); using it from now on (the config keeps \(config.address ?? previous))")
    }

    private func open(stop: Waker, doorbell: Doorbell, discover: Bool) throws(BlueZProblem) -> BlueZSensorSession {
        let inbox = self.inbox
        let counters = self.counters
        let clock = self.clock
        let logger = self.logger
        let name = self.name
        let clockTrust = self.clockTrust
        var tuning = self.tuning
        if !discover { tuning.scanSeconds = 0 }
        let session = try BlueZSensorSession(target: target, tuning: tuning, stop: stop, handlers: .init(onValue: { bytes in
            // On the bus thread: note when it came, hand it to the source's thread.
            let wall = clock.now()
            let receipt = BeatReceipt.now(wall: wall, clockTrusted: !CaptureTimeRule.clockLooksUnset(wall) && clockTrust.isTrusted(now: wall))
            inbox.append(bytes, receipt)
            doorbell.ring()
        }, onBattery: { percentage in
            let previous = counters.snapshot().kindStatus(BLESourceStatus.self)?.battery
            counters.update(BLESourceStatus.self) { $1.battery = percentage }
            if percentage < Self.lowBattery, previous.map({ $0 >= Self.lowBattery }) ?? true {
                logger.warning("health source \(name): the sensor's battery is at \(percentage) %: charge or replace it soon")
            }
        }))
        let now = clock.now()
        let gap = counters.snapshot().kindStatus(BLESourceStatus.self)?.disconnectedSince
        counters.update(BLESourceStatus.self) { status, ble in
            status.liveness = .healthy
            ble.silent = false
            if ble.address == nil { ble.address = session.deviceAddress }
            if let gap {
                ble.lastGap = BLESourceStatus.Gap(from: gap, to: now)
                ble.disconnectedSince = nil
            }
            ble.connections += 1
        }
        if let gap {
            logger.notice("health source \(name): heart-rate sensor \(target) is back after \(Int(now.timeIntervalSince(gap).rounded())) s")
        } else {
            logger.info("health source \(name): receiving from heart-rate sensor \(target)")
        }
        return session
    }

    private func report(_ problem: BlueZProblem, previous: BlueZProblem?) {
        let code: AgentErrorCode? = if case .accessDenied = problem { .permissionDenied } else { nil }
        let silent = if case .silent = problem { true } else { false }
        counters.update(BLESourceStatus.self) { status, ble in
            status.liveness = .unhealthy(reason: problem.description, code: code)
            ble.silent = silent
            if !silent, ble.disconnectedSince == nil { ble.disconnectedSince = clock.now() }
        }
        // Once per kind of outage, not once per attempt.
        guard problem != previous else { return }
        if let code {
            logger.error("\(code.rawValue) health source \(name): \(problem.description)")
        } else {
            logger.warning("health source \(name): \(problem.description)")
        }
    }

    private func measured(_ bytes: [UInt8], _ receipt: BeatReceipt) {
        counters.update { $0.linesRead += 1 }
        let measurement: HeartRateMeasurement
        do {
            measurement = try HeartRateMeasurement(bytes: bytes)
        } catch {
            counters.update { $0.malformedLines += 1 }
            log.warning("skipping a notification of \(target): \(error.description)")
            return
        }
        if measurement.contact == .notDetected { counters.update(BLESourceStatus.self) { $1.noContactReadings += 1 } }
        take(windows.add(measurement, at: receipt))
    }

    /// Closed windows into records, pending in the committer.
    private func take(_ results: [BeatWindowResult]) {
        for result in results {
            var sample: HealthSample
            let start: BeatReceipt
            switch result {
            case .heartRate(let bpm, let readings, let begin, let seconds):
                guard bpm > 0, bpm <= 300 else { continue }
                sample = HealthSample(metric: .heartRate, value: Double(bpm), timestamp: begin.wall)
                sample.details = ["readings": Double(readings), "window_seconds": seconds]
                start = begin
            case .hrv(let statistics, let begin, let seconds):
                sample = HealthSample(metric: .heartRateVariability, value: HealthNormaliser.round(statistics.sdnn, decimals: 1),
                                      timestamp: begin.wall)
                guard sample.value > 0 else { continue }
                sample.details = ["rmssd_ms": HealthNormaliser.round(statistics.rmssd, decimals: 1),
                                  "beats": Double(statistics.cleanIntervals),
                                  "rejected_beats": Double(statistics.rejectedIntervals),
                                  "window_seconds": seconds]
                start = begin
            case .hrvInsufficient(let why, _):
                counters.update(BLESourceStatus.self) { $1.hrvWindowsDropped += 1 }
                log.logger.info("health source \(name): no HRV sample for this window: \(why.description)")
                continue
            }
            do {
                var record = try normaliser.record(sample, source: name)
                if !start.clockTrusted {
                    // Dated from a clock that cannot be believed: held until corrected (docs/time.md).
                    record.provisional = ProvisionalTime(capturedAt: start.wall, now: start.wall, boot: start.boot)
                }
                committer.pending.append(record)
                committer.lineRead(movesAnchor: false)
            } catch {
                counters.update { $0.rejectedSamples += 1 }
                log.warning("skipping a sample of \(target): cannot encode it: \(error)")
            }
        }
    }
}

/// Notifications handed from the bus thread to the source's thread, oldest first.
final class NotificationInbox: Sendable {
    private let items = Mutex<[(bytes: [UInt8], receipt: BeatReceipt)]>([])

    func append(_ bytes: [UInt8], _ receipt: BeatReceipt) { items.withLock { $0.append((bytes, receipt)) } }

    func takeAll() -> [(bytes: [UInt8], receipt: BeatReceipt)] {
        items.withLock { items in
            defer { items = [] }
            return items
        }
    }
}
