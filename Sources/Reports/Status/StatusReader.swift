import AgentCore
import Foundation
import Platform

/// Builds a `StatusReport` from the config and the database, opening the database
/// read-only so it works beside a running daemon and leaves no trace.
public struct StatusReader: Sendable {
    let clock: any WallClock
    /// The quiet hours' time zone: the system's.
    let timeZone: TimeZone

    public init(clock: any WallClock = SystemClock(), timeZone: TimeZone = .current) {
        self.clock = clock
        self.timeZone = timeZone
    }

    /// `config` is nil with `configError` set when the file could not be read.
    public func read(config: AgentConfig?, configFile: String, configError: String? = nil) -> StatusReport {
        let now = clock.now()
        let effective = config ?? AgentConfig()
        let path = effective.storage.database
        let exists = FileManager.default.fileExists(atPath: path)
        var report = StatusReport(
            generatedAt: now, agentVersion: AgentVersion.string,
            configured: config?.isOnboarded ?? false, configFile: configFile, configError: configError,
            endpoint: config.flatMap { $0.server.endpoint.isEmpty ? nil : $0.box.isPaired ? $0.server.endpoint : $0.server.ingestURL },
            deviceId: config.flatMap { $0.server.deviceID.isEmpty ? nil : $0.server.deviceID },
            daemon: .init(running: exists && FileLock.daemon(databasePath: path).isLocked(), pid: nil),
            database: .init(path: path, exists: exists, sizeBytes: 0, freeDiskBytes: DiskSpace.availableBytes(at: path)),
            streams: [], uploader: .init(liveness: "unknown"), warnings: [])

        var database: AgentDatabase?
        if exists {
            do {
                database = try AgentDatabase(readOnlyPath: path, clock: clock)
            } catch {
                report.database.error = "\(error)"
            }
        }
        report.clock = clockStatus(database: database, config: effective, now: now)
        if let database {
            fill(&report, from: database, config: effective, now: now)
            coverage(&report, from: database, now: now)
        } else {
            report.streams = StreamName.allCases.map { emptyStream($0, enabled: effective.isEnabled($0)) }
        }
        if let i = report.streams.firstIndex(where: { $0.name == StreamName.microphone.rawValue }), report.streams[i].enabled {
            muted(&report.streams[i], config: effective, database: report.daemon.running ? database : nil, now: now)
        }
        report.warnings = warnings(for: report, config: effective, now: now)
        return report
    }

    private func fill(_ report: inout StatusReport, from database: AgentDatabase, config: AgentConfig, now: Date) {
        report.database.sizeBytes = database.fileBytes()
        let limits = config.storage.limits
        report.database.maxQueueBytes = limits.queueCap(filesystemBytes: DiskSpace.totalBytes(at: database.path))
        report.database.minFreeBytes = limits.minFreeBytes
        report.database.reserveBytes = StorageReserve(databasePath: database.path, size: limits.reserveBytes).reservedBytes
        do {
            let evicted = try database.housekeeping.evictedTotals()
            let counts = try database.recordQueue.counts()
            let health = Dictionary(try database.agentState.storedLiveness().map { ($0.component, $0) }, uniquingKeysWith: { $1 })
            let stats = Dictionary(try database.recordQueue.uploadStats().map { ($0.stream, $0) }, uniquingKeysWith: { $1 })
            let switches = PauseSwitches(database: database)
            let paused = try switches.pausedStreams(at: now)
            let server = ServerSwitches.load(from: database, endpoint: config.server.endpoint)
            report.serverSwitches = server.map {
                .init(supported: $0.supported, fetchedAt: $0.fetchedAt, lastAttemptAt: $0.lastAttemptAt,
                      lastProblem: $0.lastProblem, switchedOff: $0.switchedOffStreams.map(\.rawValue).sorted(),
                      configurationComplete: $0.isConfigurationComplete)
            }
            report.server = ServerIdentity.load(from: database, endpoint: config.server.endpoint).map {
                .init(generation: $0.generation?.rawValue, version: $0.version, commit: $0.commit, builtAt: $0.builtAt,
                      fetchedAt: $0.fetchedAt, name: $0.name)
            }
            if config.box.isPaired {
                // The box answers over iroh only; every answer names its build.
                let reach = BoxReach.load(from: database)
                var box = report.server?.generation == ServerIdentity.Generation.box.rawValue ? report.server
                    : .init(generation: ServerIdentity.Generation.box.rawValue, name: ServerIdentity.Generation.box.name)
                box?.reachedBy = reach?.path
                box?.answeredAt = reach?.answeredAt
                report.server = box
            }
            if report.daemon.running, let pid = try database.agentState.value(AgentStateKey.daemonPID).flatMap(Int.init) {
                report.daemon.pid = pid
            }
            report.streams = try StreamName.allCases.map { name in
                var s = emptyStream(name, enabled: config.isEnabled(name))
                func count(_ status: RecordStatus) -> StreamCount? { counts.first { $0.stream == name && $0.status == status } }
                s.pending = count(.pending)?.records ?? 0
                s.pendingBytes = count(.pending)?.bytes ?? 0
                s.failed = count(.failed)?.records ?? 0
                s.failedBytes = count(.failed)?.bytes ?? 0
                s.uploaded = count(.uploaded)?.records ?? 0
                s.paused = paused.contains(name)
                if let pause = try switches.pause(of: name, at: now) {
                    s.pausedSince = pause.since
                    s.pausedUntil = pause.until
                }
                s.evicted = evicted[name] ?? 0
                func counter(_ counter: String) throws -> Int? {
                    try database.agentState.value(StreamCounter.key(name.rawValue, counter)).flatMap { Int($0) }
                }
                func detail(_ detail: String) throws -> String? {
                    try database.agentState.value(StreamCounter.key(name.rawValue, detail))
                }
                if name == .health {
                    s.malformedLines = try counter(StreamCounter.malformedLines)
                    s.refusedSamples = try counter(StreamCounter.refusedSamples)
                    s.serverSkippedSamples = try counter(StreamCounter.serverSkippedSamples)
                    if report.daemon.running && s.enabled && !s.paused {
                        s.sensors = try detail(StreamCounter.bleSensors).flatMap(SensorStatus.decode)
                    }
                }
                if name == .microphone {
                    s.silentChunksDropped = try counter(StreamCounter.silentChunksDropped)
                    if report.daemon.running && s.enabled && !s.paused, let reason = try detail(StreamCounter.deviceReason) {
                        let inUse = try detail(StreamCounter.deviceInUse).flatMap { $0.isEmpty ? nil : $0 }
                        s.device = .init(inUse: inUse, chosen: config.microphone.device,
                                         onFallback: inUse != nil && inUse != config.microphone.device, reason: reason,
                                         since: try detail(StreamCounter.deviceSince).flatMap(RFC3339.date(from:)))
                    }
                }
                if name == .location {
                    s.privacySkipped = try counter(StreamCounter.privacySkipped)
                    s.privacyCoarsened = try counter(StreamCounter.privacyCoarsened)
                    s.stationaryThinned = try counter(StreamCounter.stationaryThinned)
                    s.tooCoarse = try counter(StreamCounter.tooCoarse)
                    if report.daemon.running && s.enabled && !s.paused {
                        s.source = try detail(StreamCounter.locationSource)
                        s.sourceReason = try detail(StreamCounter.locationSourceReason)
                        s.lastAccuracy = try detail(StreamCounter.lastAccuracy).flatMap { Double($0) }
                        s.maxAccuracy = config.location.maxAccuracy
                        // `LocationMethod.textForm`: the kind, `?` after it when inferred.
                        if let method = try detail(StreamCounter.lastMethod), !method.isEmpty {
                            s.lastMethod = method.hasSuffix("?") ? String(method.dropLast()) : method
                            s.lastMethodInferred = method.hasSuffix("?")
                        }
                    }
                }
                if let h = health[name.rawValue] {
                    s.liveness = h.state
                    s.reason = h.reason
                    s.errorCode = h.code?.rawValue
                    s.checkedAt = h.checkedAt
                }
                if !s.enabled {
                    s.liveness = "disabled"
                    s.switchedOffBy = "config"
                } else if let why = server?.offReason(name) {
                    s.liveness = "disabled"
                    s.switchedOffBy = "server"
                    s.reason = why
                } else if s.paused {
                    s.liveness = "paused"
                }
                s.oldestPendingAgeSeconds = try database.recordQueue.oldestPendingAge(stream: name)
                s.lastCapturedAt = try database.recordQueue.lastCapture(stream: name)
                if let st = stats[name] {
                    s.lastUploadAttemptAt = st.lastAttemptAt
                    s.lastUploadSuccessAt = st.lastSuccessAt
                    s.lastUploadResult = st.lastResult
                    s.lastUploadErrorCode = st.lastErrorCode?.rawValue
                    s.recordsSent = st.recordsSent
                    s.bytesSent = st.bytesSent
                }
                return s
            }
            if let h = health["uploader"] {
                report.uploader.liveness = h.state
                report.uploader.reason = h.reason
            }
            report.uploader.lastAttemptAt = stats.values.compactMap(\.lastAttemptAt).max()
            report.uploader.lastSuccessAt = stats.values.compactMap(\.lastSuccessAt).max()
            let latest = stats.values.compactMap { s in s.lastAttemptAt.map { ($0, s) } }.max { $0.0 < $1.0 }?.1
            if let code = latest?.lastErrorCode {
                report.uploader.lastErrorCode = code.rawValue
                report.uploader.lastErrorMeaning = code.meaning
            }
            report.uploader.authPausedUntil = try database.agentState.value(AgentStateKey.uploadAuthPausedUntil).flatMap(RFC3339.date(from:)).flatMap { $0 > now ? $0 : nil }
            report.uploader.retryAt = try database.agentState.value(AgentStateKey.uploadRetryAt).flatMap(RFC3339.date(from:))
            if config.server.gzip {
                report.uploader.uncompressedSince = try database.agentState.value(AgentStateKey.uploadPlainBodiesSince).flatMap(RFC3339.date(from:))
            }
            report.uploader.errors = try database.recordQueue.uploadErrorTotals().sorted { $0.key < $1.key }
                .map { StatusReport.ErrorCount(code: $0.key, count: $0.value) }
            // The daemon's power decision, while it runs (a stopped daemon changes nothing).
            if report.daemon.running, let text = try database.agentState.value(AgentStateKey.powerState),
               let power = try? JSONDecoder().decode(StoredPowerState.self, from: Data(text.utf8)) {
                report.power = .init(source: power.source, batteryPercent: power.batteryPercent,
                                     batteryStatus: power.batteryStatus, effects: power.effects)
                if power.microphonePaused, let i = report.streams.firstIndex(where: { $0.name == StreamName.microphone.rawValue }),
                   report.streams[i].enabled, !report.streams[i].paused, report.streams[i].switchedOffBy == nil {
                    report.streams[i].liveness = "paused"
                    report.streams[i].reason = power.effects.first { $0.hasPrefix("microphone paused") }
                }
            }
            // The daemon's view of the connection, while it runs.
            if report.daemon.running, let metered = StoredMeteredState.load(from: database) {
                report.network = .init(onMetered: config.upload.onMetered.rawValue, watchedBy: metered.watchedBy,
                                       metered: metered.metered, meteredValue: metered.value, since: metered.since,
                                       deferredStreams: metered.deferredStreams, problem: metered.problem,
                                       decidedBy: metered.decidedBy, decision: metered.decision,
                                       meteredNetworks: config.upload.meteredNetworks, connection: metered.connection,
                                       ssid: metered.ssid, devices: metered.devices, vpn: metered.vpn)
            }
            if let purge = try database.housekeeping.latestPurge() {
                report.database.lastPurge = .init(at: purge.at, code: nil, message: purge.message)
            }
            if let event = try database.agentState.latestEvent(code: .storageFull) {
                report.database.lastStorageGuard = .init(at: event.at, code: AgentErrorCode.storageFull.rawValue, message: event.message)
            }
            report.database.belowFloorSince = try database.agentState.value(AgentStateKey.storageBelowFloorSince).flatMap(RFC3339.date(from:))
        } catch {
            report.database.error = "\(error)"
        }
    }

    /// Each stream's day so far from the coverage ledger; nothing for a queue without one.
    private func coverage(_ report: inout StatusReport, from database: AgentDatabase, now: Date) {
        guard let day = try? CoverageDay.read(database, day: now, streams: StreamName.allCases, timeZone: timeZone, now: now) else { return }
        for row in day.rows {
            guard let share = row.capturedShare, let i = report.streams.firstIndex(where: { $0.name == row.stream.rawValue }) else { continue }
            report.streams[i].coverageToday = .init(capturedShare: share, largestGap: row.largestGap.map {
                .init(state: $0.state.rawValue, from: $0.from, to: $0.to, seconds: $0.seconds)
            })
        }
    }

    /// The quiet hours, from the configuration and the system's time zone (the daemon's
    /// rule, whether or not it runs); a muted place, from what the running daemon stored.
    private func muted(_ s: inout StatusReport.Stream, config: AgentConfig, database: AgentDatabase?, now: Date) {
        let schedule = QuietSchedule(config.microphone.quiet, timeZone: timeZone)
        var why: String?
        if !schedule.isEmpty {
            let phase = schedule.phase(at: now)
            if phase.quiet {
                s.quietUntil = phase.changesAt
                s.mutedBy = "schedule"
                s.mutedSince = phase.since
                why = "quiet hours" + (phase.changesAt.map { " until \(LocalClockTime.string($0, in: timeZone, now: now))" } ?? "")
            } else {
                s.quietFrom = phase.changesAt
            }
        }
        if s.mutedBy == nil, let database, let stored = StoredMicrophoneMute.load(from: database), stored.mutedBy == "place" {
            s.mutedBy = stored.mutedBy
            s.mutedSince = stored.since
            why = "in a muted place since \(LocalClockTime.string(stored.since, in: timeZone, now: now))"
        }
        // A stream the person paused or the server switched off says so; muted, it says why.
        if let why, !s.paused, s.switchedOffBy == nil {
            s.liveness = "paused"
            s.reason = why
        }
    }

    /// The kernel's clock flag as this process sees it, and the held records of the queue.
    private func clockStatus(database: AgentDatabase?, config: AgentConfig, now: Date) -> StatusReport.Clock {
        let sync = ClockSync.live()
        let trust = ClockTrust(sync: sync, trustSystemClock: config.daemon.trustSystemClock)
        let held = (try? database?.recordQueue.heldCounts(currentBootID: BootClock.bootID)) ?? HeldCounts()
        let evidence = BootClock.bootID.flatMap { boot in try? database?.agentState.storedTimeEvidence(bootID: boot) }
        return StatusReport.Clock(synchronised: sync.unsynchronisedReason() == nil,
                                  trustSystemClock: config.daemon.trustSystemClock,
                                  trusted: trust.isTrusted(now: now), reason: trust.distrust(now: now),
                                  heldRecords: held.thisBoot, heldEarlierBoots: held.earlierBoots,
                                  trueTimeFrom: evidence?.source)
    }

    private func emptyStream(_ name: StreamName, enabled: Bool) -> StatusReport.Stream {
        StatusReport.Stream(name: name.rawValue, enabled: enabled, paused: false, liveness: enabled ? "unknown" : "disabled",
                            pending: 0, pendingBytes: 0, failed: 0, uploaded: 0, recordsSent: 0, bytesSent: 0)
    }

    func warnings(for report: StatusReport, config: AgentConfig, now: Date) -> [String] {
        var warnings: [String] = []
        if let error = report.configError { warnings.append("configuration: \(error)") }
        if report.configError == nil && !report.configured {
            warnings.append("not set up: run 'ariata-agent onboard'")
        }
        if let error = report.database.error { warnings.append("database: \(error)") }
        for stream in report.streams {
            for sensor in stream.sensors ?? [] where sensor.batteryLow {
                warnings.append("heart-rate sensor \(sensor.name): battery at \(sensor.battery ?? 0) %: charge or replace it soon")
            }
        }
        let pending = report.streams.reduce(0) { $0 + $1.pending }
        let lastSuccess = report.uploader.lastSuccessAt
        if pending > 0, report.configured, lastSuccess.map({ now.timeIntervalSince($0) > 3_600 }) ?? true,
           report.streams.contains(where: { ($0.oldestPendingAgeSeconds ?? 0) > 3_600 }) {
            warnings.append("nothing uploaded for over an hour while \(pending) records wait")
        }
        if let free = report.database.freeDiskBytes, free < Int64(config.storage.minFreeMB) * 1_048_576 * 2 {
            warnings.append("storage low: \(free / 1_048_576) MB free under \(config.storage.database) (E004 below \(config.storage.minFreeMB) MB)")
        }
        if let until = report.uploader.authPausedUntil, let server = report.server, server.generation == "virtues",
           report.uploader.reason?.contains(ServerIdentity.everyDeviceRefused) == true {
            warnings.append("uploads paused until \(RFC3339.string(from: until)): \(ServerIdentity.everyDeviceRefused) (401 \(ServerIdentity.loginWallBody)), "
                + "the known problem of \(server.name)\(server.builtAt.map { $0 >= ServerIdentity.loginWallSince ? ", a build of its 2026-02 release or later, whose web login stands in front of the device routes" : "" } ?? ""): "
                + "no new token helps; update the server (or ask its administrator)")
        } else if let until = report.uploader.authPausedUntil, report.server?.generation == ServerIdentity.Generation.box.rawValue {
            warnings.append("uploads paused until \(RFC3339.string(from: until)): \(report.uploader.reason ?? "the box refused this device"); nothing is dropped meanwhile")
        } else if let until = report.uploader.authPausedUntil {
            warnings.append("uploads paused until \(RFC3339.string(from: until)): the server refused the device token (E002); run 'ariata-agent onboard' with a new token")
        }
        if let since = report.uploader.uncompressedSince {
            warnings.append("the server does not inflate gzip bodies: it answered a compressed batch 400/415 and took it uncompressed, so uploads go uncompressed since \(RFC3339.string(from: since)); set [server] gzip = false, or put a proxy that inflates bodies in front of the server (a reload tries gzip again)")
        }
        // A refused token is the person's to fix; an unreachable server is an outage, which
        // the switches line and the uploads' own warnings already report (docs/upload.md).
        if let problem = report.serverSwitches?.lastProblem, report.daemon.running,
           problem.hasPrefix(AgentErrorCode.invalidToken.rawValue) {
            warnings.append("cannot read the server's stream switches: \(problem); the last ones stay in force")
        }
        if let since = report.database.belowFloorSince {
            warnings.append("E004 the disk was filled by something else: free disk below the floor since \(RFC3339.string(from: since)); "
                            + "the backlog is kept, the queue does not grow, and new captures replace the oldest records; free disk space under \(config.storage.database)")
        }
        if let guardEvent = report.database.lastStorageGuard, now.timeIntervalSince(guardEvent.at) < 86_400 {
            warnings.append("E004 storage guard at \(RFC3339.string(from: guardEvent.at)): \(guardEvent.message)")
        }
        for stream in report.streams where stream.liveness == "unhealthy" {
            warnings.append("\(stream.name) unhealthy: \(stream.reason ?? "no reason given")")
        }
        if report.daemon.running, report.uploader.liveness == "unhealthy", report.uploader.authPausedUntil == nil {
            warnings.append("uploads: \(report.uploader.reason ?? "failing")")
        }
        if let clock = report.clock, clock.heldRecords > 0, !clock.trusted, let source = clock.trueTimeFrom {
            warnings.append("clock not synchronised (\(clock.reason ?? "unknown")): \(clock.heldRecords) records are held with provisional times; this boot's true time is known from \(source), so the daemon corrects and releases them at its next maintenance round ('ariata-agent sync' does it now)")
        } else if let clock = report.clock, clock.heldRecords > 0 {
            warnings.append(clock.trusted
                ? "\(clock.heldRecords) records held with provisional times: the clock can be believed now, so the daemon corrects and releases them at its next maintenance round"
                : "clock not synchronised (\(clock.reason ?? "unknown")): \(clock.heldRecords) records are held with provisional times and are corrected and sent once it is; enable NTP (timedatectl set-ntp true), or set [daemon] trust_system_clock = true if this clock is right")
        }
        if let clock = report.clock, clock.heldEarlierBoots > 0 {
            warnings.append("\(clock.heldEarlierBoots) records held from an earlier boot whose clock was never synchronised: their true time is unknown, so they are kept and not sent (with [daemon] trust_system_clock = true, those with a plausible time are sent as they are)")
        }
        if report.configured && !report.daemon.running {
            // Only the system service's configuration is systemd's to start.
            if report.configFile == AgentConfig.defaultPath {
                warnings.append("the daemon is not running: sudo systemctl start ariata-agent")
            } else {
                warnings.append("the daemon is not running for \(report.configFile): start it with 'ariata-agent run --config \(report.configFile)' (or, as a user service, 'systemctl --user start ariata-agent')")
            }
        }
        return warnings
    }
}
