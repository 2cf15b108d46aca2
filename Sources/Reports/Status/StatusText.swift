import AgentCore
import Foundation

/// The terminal form of a `StatusReport`: aligned columns, readable at a glance; colour
/// only when asked for (a terminal without NO_COLOR).
public struct StatusText: Sendable {
    let colour: Bool
    let now: Date
    /// The local times of the quiet hours are said in (the system's).
    let timeZone: TimeZone

    public init(colour: Bool, now: Date = Date(), timeZone: TimeZone = .current) {
        self.colour = colour
        self.now = now
        self.timeZone = timeZone
    }

    /// Colour when standard output is a terminal and NO_COLOR is not set (no-color.org).
    public static func wantsColour(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        isatty(STDOUT_FILENO) != 0 && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    }

    /// Metres as a person says them: "40 m", "25 km".
    /// What a coarse fix made this way is worth, and why it is likely all there is
    /// (docs/streams/location.md, "How a fix was made").
    static func coarseWorth(method: String, inferred: Bool) -> (what: String, why: String)? {
        switch method {
        case "ip":
            return (inferred ? "only what looks like an IP-address lookup (GeoClue does not say)" : "only an IP-address lookup",
                    "the Wi-Fi locator knows none of the access points here, or GeoClue cannot scan Wi-Fi (`ariata-agent doctor` says which)")
        case "cell":
            return ("only a cell-tower position", "no Wi-Fi position: the Wi-Fi locator knows none of the access points here")
        case "wifi":
            return ("only a coarse Wi-Fi position", "the Wi-Fi locator knows few of the access points here")
        default:
            return nil
        }
    }

    public static func distance(_ metres: Double) -> String {
        metres < 10_000 ? "\(Int(metres.rounded())) m" : "\(Int((metres / 1_000).rounded())) km"
    }

    public func render(_ r: StatusReport) -> String {
        var out: [String] = []
        let setup = r.configured ? paint("configured", .green) : paint("not configured", .red)
        out.append("ariata-agent \(r.agentVersion)  \(setup)  (\(r.configFile))")
        if let endpoint = r.endpoint { out.append("  endpoint   \(endpoint)") }
        if let server = r.server, server.generation == ServerIdentity.Generation.box.rawValue {
            let reached = server.answeredAt.map { at in
                " (reached " + (server.reachedBy.map { BoxReach(path: $0, answeredAt: at).pathDescription + ", " } ?? "")
                    + "last answered \(age(now.timeIntervalSince(at))) ago)"
            } ?? " (not reached yet over iroh)"
            out.append("  server     \(server.name)" + reached)
        } else if let server = r.server {
            out.append("  server     \(server.name)" + (server.fetchedAt.map { " (asked \(age(now.timeIntervalSince($0))) ago)" } ?? ""))
        }
        if let device = r.deviceId { out.append("  device     \(device)") }
        let daemon = r.daemon.running ? paint("running", .green) + (r.daemon.pid.map { " (pid \($0))" } ?? "") : paint("not running", .yellow)
        out.append("  daemon     \(daemon)")
        out.append("")

        let header = ["STREAM", "STATE", "PENDING", "FAILED", "OLDEST", "LAST CAPTURE", "LAST UPLOAD"]
        var rows: [[String]] = []
        let waiting = r.serverSwitches?.configurationComplete == false
        for s in r.streams {
            rows.append([
                s.name, waiting && s.switchedOffBy == "server" ? "waiting (server)" : s.switchedOffBy.map { "off (\($0))" } ?? s.liveness,
                s.pending == 0 ? "0" : "\(s.pending) (\(bytes(s.pendingBytes)))",
                "\(s.failed)",
                s.oldestPendingAgeSeconds.map(age) ?? "-",
                s.lastCapturedAt.map { age(now.timeIntervalSince($0)) + " ago" } ?? "-",
                s.lastUploadSuccessAt.map { age(now.timeIntervalSince($0)) + " ago" } ?? "-",
            ])
        }
        let widths = header.indices.map { i in ([header[i]] + rows.map { $0[i] }).map(\.count).max() ?? 0 }
        func line(_ cells: [String], colouring: Bool) -> String {
            cells.indices.map { i in
                let padded = cells[i].padding(toLength: widths[i], withPad: " ", startingAt: 0)
                return colouring && i == 1 ? paint(padded, colourFor(state: cells[i])) : padded
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        out.append(line(header, colouring: false))
        for row in rows { out.append(line(row, colouring: true)) }
        if waiting {
            out.append("  \(ServerSwitches.notConfiguredReason)")
        }
        for s in r.streams where s.reason != nil && s.liveness == "unhealthy" {
            out.append("  \(s.name): \(s.errorCode.map { "\($0) " } ?? "")\(s.reason ?? "")")
        }
        for s in r.streams where s.paused && s.enabled {
            out.append("  \(s.name): paused " + (s.pausedUntil.map { "until \(LocalClockTime.string($0, in: timeZone, now: now)) (resumes by itself in \(age($0.timeIntervalSince(now))))" }
                ?? "until 'ariata-agent resume \(s.name)'"))
        }
        for s in r.streams where s.enabled && s.switchedOffBy == nil {
            if s.mutedBy == "schedule" {
                out.append("  \(s.name): quiet" + (s.quietUntil.map { " until \(LocalClockTime.string($0, in: timeZone, now: now))" } ?? "") + " ([[microphone.quiet]])")
            } else if s.mutedBy == "place" {
                out.append("  \(s.name): muted in a muted place" + (s.mutedSince.map { " since \(LocalClockTime.string($0, in: timeZone, now: now))" } ?? "")
                           + " ([[location.exclude]] microphone = \"mute\")")
            }
            if let from = s.quietFrom {
                out.append("  \(s.name): quiet hours from \(LocalClockTime.string(from, in: timeZone, now: now))")
            }
        }
        let covered = r.streams.compactMap { s in s.coverageToday.map { (s.name, $0) } }
        if !covered.isEmpty {
            // One line for the day so far; `ariata-agent coverage` draws it.
            out.append("  coverage today: " + covered.map { name, day in
                "\(name) \(Int((day.capturedShare * 100).rounded())) %" + (day.largestGap.map { gap in
                    " (largest gap \(LocalClockTime.string(gap.from, in: timeZone))-\(LocalClockTime.string(gap.to, in: timeZone)) "
                        + "\(CoverageState(rawValue: gap.state)?.label ?? gap.state))"
                } ?? "")
            }.joined(separator: ", "))
        }
        for s in r.streams where (s.privacySkipped ?? 0) + (s.privacyCoarsened ?? 0) > 0 {
            out.append("  \(s.name): \(s.privacySkipped ?? 0) fixes skipped and \(s.privacyCoarsened ?? 0) coarsened in privacy zones since the daemon started")
        }
        for s in r.streams where !s.paused && s.liveness != "disabled" {
            guard let device = s.device, let inUse = device.inUse else { continue }
            out.append("  \(s.name): capturing from '\(inUse)'" + (device.onFallback ? " (\(device.reason))" : ""))
        }
        for s in r.streams where !s.paused && s.liveness != "disabled" {
            guard let source = s.source else { continue }
            // The JSON value is the source's own name but for GeoClue's capitals.
            out.append("  \(s.name): fixes from \(source == "geoclue" ? "GeoClue" : source)" + (s.sourceReason.map { " (\($0))" } ?? ""))
        }
        for s in r.streams where !s.paused && s.liveness != "disabled" {
            guard let accuracy = s.lastAccuracy, let ceiling = s.maxAccuracy, ceiling > 0, accuracy > Double(ceiling) else { continue }
            let from = s.source.map { " (\($0 == "geoclue" ? "GeoClue" : $0))" } ?? ""
            if let method = s.lastMethod, let worth = Self.coarseWorth(method: method, inferred: s.lastMethodInferred == true) {
                out.append("  \(s.name): \(worth.what), \(Self.distance(accuracy))\(from): \(worth.why); over max_accuracy \(ceiling) m, so none is written")
            } else {
                out.append("  \(s.name): only coarse fixes: the last was \(Self.distance(accuracy))\(from), over max_accuracy \(ceiling) m, so none is written")
            }
        }
        for s in r.streams where (s.tooCoarse ?? 0) > 0 {
            out.append("  \(s.name): \(s.tooCoarse ?? 0) fixes not written as coarser than max_accuracy since the daemon started")
        }
        for s in r.streams where (s.stationaryThinned ?? 0) > 0 {
            out.append("  \(s.name): \(s.stationaryThinned ?? 0) fixes not written while the receiver stood still since the daemon started")
        }
        for s in r.streams {
            for sensor in s.sensors ?? [] { out.append("  \(s.name): \(Self.sensorLine(sensor))") }
        }
        for s in r.streams where (s.silentChunksDropped ?? 0) > 0 {
            out.append("  \(s.name): \(s.silentChunksDropped ?? 0) silent chunks dropped at capture since the daemon started ([microphone] upload_silent = false)")
        }
        for s in r.streams where (s.serverSkippedSamples ?? 0) > 0 {
            out.append("  \(s.name): \(s.serverSkippedSamples ?? 0) samples not captured: their metric is not among the server's enabled_metrics")
        }
        for s in r.streams where (s.malformedLines ?? 0) + (s.refusedSamples ?? 0) > 0 {
            out.append("  \(s.name): \(s.malformedLines ?? 0) malformed lines and \(s.refusedSamples ?? 0) refused samples skipped since the daemon started (each is in the log)")
        }
        out.append("")

        var upload = "uploads    last attempt " + (r.uploader.lastAttemptAt.map { age(now.timeIntervalSince($0)) + " ago" } ?? "never")
        upload += ", last success " + (r.uploader.lastSuccessAt.map { age(now.timeIntervalSince($0)) + " ago" } ?? "never")
        out.append(upload)
        if let code = r.uploader.lastErrorCode {
            out.append("           last error \(paint(code, .red)) \(r.uploader.lastErrorMeaning ?? "")")
        }
        if let retry = r.uploader.retryAt, retry > now {
            out.append("           next retry in \(age(retry.timeIntervalSince(now)))")
        }
        if r.server?.generation == ServerIdentity.Generation.box.rawValue {
            out.append("switches   none on a Virtues box: this device's configuration alone decides what it captures")
        } else if let switches = r.serverSwitches {
            let asked = switches.fetchedAt.map { "fetched \(age(now.timeIntervalSince($0))) ago" } ?? "never fetched"
            let what = !switches.supported ? "none on this server (the local config alone decides)"
                : !switches.configurationComplete ? "none switched on yet for this device (asked every minute)"
                : switches.switchedOff.isEmpty ? "every stream on" : "\(switches.switchedOff.joined(separator: ", ")) off"
            out.append("switches   \(what), \(asked)" + (switches.lastProblem.map { "; last ask failed: \($0)" } ?? ""))
        }
        let free = r.database.freeDiskBytes.map { "\(bytes($0)) free" } ?? "free space unknown"
        out.append("queue      \(r.database.path): \(r.database.exists ? bytes(r.database.sizeBytes) : "not created yet"), \(free)")
        if r.streams.contains(where: { $0.evicted > 0 }) {
            let counts = r.streams.map { "\($0.name) \($0.evicted)" }.joined(separator: ", ")
            out.append("evicted    \(counts) (E004: deleted by the storage guard before upload)")
        }
        if let power = r.power {
            let level = power.batteryPercent.map { ", battery \($0) %" + (power.batteryStatus.map { " (\($0))" } ?? "") } ?? ""
            out.append("power      on \(power.source)\(level)" + (power.effects.isEmpty ? "" : ": " + power.effects.joined(separator: "; ")))
        }
        if let network = r.network {
            out.append("network    \(Self.describe(network, now: now, age: age))")
        }
        if let purge = r.database.lastPurge {
            out.append("purged     \(age(now.timeIntervalSince(purge.at))) ago: \(purge.message)")
        }
        if let clock = r.clock {
            let state = clock.synchronised ? "synchronised" : clock.trusted ? "not synchronised, trusted ([daemon] trust_system_clock)" : paint("not synchronised", .yellow)
            let held = clock.heldRecords + clock.heldEarlierBoots
            out.append("clock      \(state)" + (clock.trusted ? "" : clock.trueTimeFrom.map { ", true time from \($0)" } ?? "")
                + (held > 0 ? ", \(held) records held with provisional times" : ""))
        }
        if !r.warnings.isEmpty {
            out.append("")
            for w in r.warnings { out.append(paint("warning: ", .yellow) + w) }
        }
        return out.joined(separator: "\n") + "\n"
    }

    /// "sensor polar-h10: connected, battery 84 %; last out of reach 2026-…Z for 121 s".
    static func sensorLine(_ sensor: SensorStatus) -> String {
        var line = "sensor \(sensor.name): "
        if let since = sensor.disconnectedSince {
            line += "out of reach since \(RFC3339.string(from: since))"
            switch sensor.awayWatch {
            case .advertisementMonitor?: line += " (BlueZ's advertisement monitor watches for it)"
            case .discovery?: line += " (looked for by a short discovery every few minutes: no advertisement monitor from BlueZ)"
            case nil: break
            }
        } else if sensor.state == .silent {
            line += "connected but silent (see its health)"
        } else {
            line += sensor.connected ? "connected" : "not connected"
        }
        if let battery = sensor.battery { line += ", battery \(battery) %\(sensor.batteryLow ? " (low)" : "")" }
        if let from = sensor.lastGapFrom, let seconds = sensor.lastGapSeconds {
            line += "; last out of reach \(RFC3339.string(from: from)) for \(Int(seconds.rounded())) s"
        }
        if sensor.hrvWindowsDropped > 0 { line += "; \(sensor.hrvWindowsDropped) HRV windows without enough clean beats" }
        if let adopted = sensor.adoptedAddress { line += "; found under a new address \(adopted) (the config keeps the old one)" }
        return line
    }

    /// "metered: listed in metered_networks (Ana's iPhone), for 5m: microphone waits for an
    /// unmetered connection (...)"; a daemon older than the rules stored no decision, and its
    /// state reads "metered: NetworkManager says yes".
    static func describe(_ network: StatusReport.Network, now: Date, age: (Double) -> String) -> String {
        let setting = "[upload] on_metered = \"\(network.onMetered)\""
        guard let by = network.watchedBy else {
            return "metering unknown: \(network.problem ?? "nothing watches it"); uploads go as on any network"
        }
        let decision = network.decision ?? "\(by) says \(network.meteredValue ?? "unknown")"
        let since = network.since.map { ", for \(age(now.timeIntervalSince($0)))" } ?? ""
        switch network.metered {
        case true?:
            let held = network.deferredStreams.isEmpty ? "everything goes (\(setting))"
                : "\(network.deferredStreams.joined(separator: ", ")) \(network.deferredStreams.count == 1 ? "waits" : "wait") for an unmetered connection (\(setting)); 'ariata-agent sync' sends it now"
            return "metered: \(decision)\(since): \(held)"
        case false?:
            return "not metered: \(decision)\(since)"
        case nil:
            return "metering unknown: \(decision)\(since); uploads go as on any network"
        }
    }

    enum Colour: String {
        case red = "31", green = "32", yellow = "33"
    }

    func colourFor(state: String) -> Colour? {
        switch state.trimmingCharacters(in: .whitespaces) {
        case "healthy": return .green
        case "unhealthy": return .red
        case "paused", "asleep": return .yellow
        default: return nil
        }
    }

    func paint(_ text: String, _ c: Colour?) -> String {
        guard colour, let c else { return text }
        return "\u{1B}[\(c.rawValue)m\(text)\u{1B}[0m"
    }

    /// 42s, 5m, 3h12m, 2d4h.
    func age(_ seconds: Double) -> String {
        let s = Int(max(0, seconds))
        if s < 60 { return "\(s)s" }
        if s < 3_600 { return "\(s / 60)m" }
        if s < 86_400 { return "\(s / 3_600)h\(s % 3_600 / 60)m" }
        return "\(s / 86_400)d\(s % 86_400 / 3_600)h"
    }

    func bytes(_ n: Int64) -> String { ProgressBar.bytes(n) }
}
