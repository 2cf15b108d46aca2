import AgentCore
import Foundation

/// Everything `ariata-agent status` shows, read from the config and the database
/// (read-only). Its JSON form (`status --json`) is a stable schema, docs/status.schema.json:
/// fields are only ever added; `schema_version` changes if one is removed or changes
/// meaning. Times are RFC 3339 UTC strings, durations seconds, sizes bytes; a value that
/// is not known is left out.
public struct StatusReport: Codable, Sendable, Equatable {
    public static let schemaVersion = 1

    public var schemaVersion = StatusReport.schemaVersion
    public var generatedAt: Date
    public var agentVersion: String
    public var configured: Bool
    public var configFile: String

    /// The exit status of `ariata-agent status`, for scripts: 0 all healthy, 1 a warning,
    /// 3 set up but the daemon is not running (as `systemctl is-active` says 3 for inactive).
    public var exitStatus: Int32 {
        if configured && !daemon.running { return 3 }
        return warnings.isEmpty ? 0 : 1
    }
    public var configError: String?
    public var endpoint: String?
    public var deviceId: String?
    public var daemon: Daemon
    public var database: Database
    public var streams: [Stream]
    public var uploader: Uploader
    public var warnings: [String]
    /// Whether capture times can be believed, and the records held until they can.
    public var clock: Clock? = nil
    /// What the running daemon's power policy ([power]) saw and changed.
    public var power: Power? = nil
    /// What the running daemon knows of the connection's metering, and what waits for an
    /// unmetered one (`[upload] on_metered`, docs/laptop.md#metered-networks).
    public var network: Network? = nil
    /// The server's stream switches as last fetched (absent before the daemon first asked).
    public var serverSwitches: ServerSwitchesStatus? = nil
    /// Which server this is (generation, version, build), as the daemon last read it from
    /// the server's `GET /health`; absent before that.
    public var server: Server? = nil

    public struct Server: Codable, Sendable, Equatable {
        /// `ariata`, `virtues`, `box` (a Virtues box), or nil for a server that is neither.
        public var generation: String?
        public var version: String?
        public var commit: String?
        public var builtAt: String?
        public var fetchedAt: Date?
        /// For people: "Virtues 0.4.2, commit d561967, built 2026-03-10T12:00:00Z".
        public var name: String
        /// A Virtues box: how the daemon last reached it (`direct` on the LAN, `relay`).
        public var reachedBy: String? = nil
        /// A Virtues box: when it last answered over iroh.
        public var answeredAt: Date? = nil
    }

    public struct ServerSwitchesStatus: Codable, Sendable, Equatable {
        /// False: the server has no switches (a Virtues server); the local config alone decides.
        public var supported: Bool
        /// When the server last answered (with its switches, or that it has none).
        public var fetchedAt: Date?
        /// When the daemon last asked, and what went wrong then.
        public var lastAttemptAt: Date?
        public var lastProblem: String?
        /// Streams the server switched off (agent stream names).
        public var switchedOff: [String]
        /// False while the person has switched no stream on at the server yet (right after
        /// pairing): nothing is captured, and the daemon asks every minute.
        public var configurationComplete: Bool = true
    }

    public struct Power: Codable, Sendable, Equatable {
        /// `mains` or `battery`.
        public var source: String
        public var batteryPercent: Int?
        public var batteryStatus: String?
        /// What the power state changes now (empty on mains).
        public var effects: [String]
    }

    public struct Network: Codable, Sendable, Equatable {
        /// `[upload] on_metered`: `all`, `small` or `none`.
        public var onMetered: String
        /// Who says whether the connection is metered ("NetworkManager"); nil while nobody does.
        public var watchedBy: String?
        /// Whether it is metered; nil while not known (uploads then go as on any network).
        public var metered: Bool?
        /// NetworkManager's word: `yes`, `guess-yes`, `no`, `guess-no`, `unknown`.
        public var meteredValue: String?
        /// Since when this has been so.
        public var since: Date?
        /// The streams whose scheduled uploads are deferred now (`sync` sends them all the same).
        public var deferredStreams: [String]
        /// Why metering is not known.
        public var problem: String?
        /// Which rule decided: `metered_networks`, `device` (a device under the default
        /// route) or `networkmanager` (its global value).
        public var decidedBy: String?
        /// The rule's words: "listed in metered_networks (Ana's iPhone)".
        public var decision: String?
        /// `[upload] metered_networks`.
        public var meteredNetworks: [String]?
        /// The connection under the default route (its id), its Wi-Fi SSID, its devices, and
        /// the VPN looked through to reach it.
        public var connection: String?
        public var ssid: String?
        public var devices: [String]?
        public var vpn: String?

        public init(onMetered: String, watchedBy: String?, metered: Bool?, meteredValue: String?, since: Date?,
                    deferredStreams: [String], problem: String?, decidedBy: String? = nil, decision: String? = nil,
                    meteredNetworks: [String]? = nil, connection: String? = nil, ssid: String? = nil, devices: [String]? = nil,
                    vpn: String? = nil) {
            self.onMetered = onMetered
            self.watchedBy = watchedBy
            self.metered = metered
            self.meteredValue = meteredValue
            self.since = since
            self.deferredStreams = deferredStreams
            self.problem = problem
            self.decidedBy = decidedBy
            self.decision = decision
            self.meteredNetworks = meteredNetworks
            self.connection = connection
            self.ssid = ssid
            self.devices = devices
            self.vpn = vpn
        }
    }

    public struct Daemon: Codable, Sendable, Equatable {
        public var running: Bool
        public var pid: Int?
    }

    public struct Database: Codable, Sendable, Equatable {
        public var path: String
        public var exists: Bool
        public var sizeBytes: Int64
        public var freeDiskBytes: Int64?
        public var lastStorageGuard: Event?
        public var error: String?
        /// The queue's cap in bytes ([storage] max_queue_mb, or the automatic one).
        public var maxQueueBytes: Int64?
        /// The floor: below this much free disk the storage guard evicts.
        public var minFreeBytes: Int64?
        /// Bytes the storage guard's reserve file holds now (0 while it is released).
        public var reserveBytes: Int64?
        /// The latest `ariata-agent purge`: when, and what it deleted.
        public var lastPurge: Event? = nil
        /// Since when the free disk has been below the floor: the queue does not grow, and
        /// new captures replace the oldest records (nil when it is above).
        public var belowFloorSince: Date? = nil
    }

    public struct Event: Codable, Sendable, Equatable {
        public var at: Date
        public var code: String?
        public var message: String
    }

    public struct Stream: Codable, Sendable, Equatable {
        public var name: String
        public var enabled: Bool
        public var paused: Bool
        /// `healthy`, `unhealthy`, `disabled`, `paused` or `unknown` (never checked).
        public var liveness: String
        public var reason: String?
        public var errorCode: String?
        public var checkedAt: Date?
        public var pending: Int
        public var pendingBytes: Int64
        public var failed: Int
        public var uploaded: Int
        public var oldestPendingAgeSeconds: Double?
        public var lastCapturedAt: Date?
        public var lastUploadAttemptAt: Date?
        public var lastUploadSuccessAt: Date?
        public var lastUploadResult: String?
        public var lastUploadErrorCode: String?
        public var recordsSent: Int64
        public var bytesSent: Int64
        /// Pending records the storage guard deleted before upload, since the database was made.
        public var evicted: Int64 = 0
        /// Health only: lines that could not be read, and samples refused by the contract's
        /// rules, since the daemon started (each is in the log with its file and line).
        public var malformedLines: Int?
        public var refusedSamples: Int?
        /// When the stream was paused (`ariata-agent pause`), while it is.
        public var pausedSince: Date? = nil
        /// When a timed pause ends by itself; nil while not paused or paused until `resume`.
        public var pausedUntil: Date? = nil
        /// Location only: fixes not written because they lay in a privacy zone, and fixes
        /// written coarsened (`action = "coarsen"`), since the daemon started.
        public var privacySkipped: Int? = nil
        public var privacyCoarsened: Int? = nil
        /// Location only: fixes not written because the receiver stood still or had not
        /// moved `min_distance` (docs/streams/location.md), and fixes not written because
        /// they were coarser than `max_accuracy`, since the daemon started.
        public var stationaryThinned: Int? = nil
        public var tooCoarse: Int? = nil
        /// Location only, while the daemon runs: the accuracy (metres) of the latest fix
        /// received, written or not, and the ceiling it is held to (`max_accuracy`, 0: none).
        public var lastAccuracy: Double? = nil
        public var maxAccuracy: Int? = nil
        /// Location only, while the daemon runs: how that fix was made when its source said
        /// (`wifi`, `ip`, `cell`, `gnss`, `static`), and whether that was inferred from its
        /// accuracy alone rather than told (GeoClue 2.6 tells nothing).
        public var lastMethod: String? = nil
        public var lastMethodInferred: Bool? = nil
        /// Microphone only: chunks dropped at capture as silent (`[microphone] upload_silent
        /// = false`), since the daemon started.
        public var silentChunksDropped: Int? = nil
        /// Payload bytes of the failed records.
        public var failedBytes: Int64? = nil
        /// Who turned the stream off: `config` (the file) or `server` (its web UI); absent while on.
        public var switchedOffBy: String? = nil
        /// Health only: samples not captured because the server did not enable their metric.
        public var serverSkippedSamples: Int? = nil
        /// Microphone only, while the daemon runs: the capture device in use and why.
        public var device: CaptureDevice? = nil
        /// Location only, while the daemon runs: where fixes come from (`gpsd`, `geoclue`)
        /// and, with `source = "auto"`, why that one.
        public var source: String? = nil
        public var sourceReason: String? = nil
        /// Health only, while the daemon runs: its Bluetooth LE sensors (battery, connection, gaps).
        public var sensors: [SensorStatus]? = nil
        /// Microphone only, with `[[microphone.quiet]]`: while in quiet hours, when they end;
        /// otherwise when the next begin (nil: none within a week).
        public var quietUntil: Date? = nil
        public var quietFrom: Date? = nil
        /// Microphone only: what mutes it now (`schedule`, `place`), and since when; the
        /// place from the running daemon's latest fix.
        public var mutedBy: String? = nil
        public var mutedSince: Date? = nil
        /// Today so far, from the coverage ledger (docs/operations.md, "Coverage"); nil when
        /// it knows nothing of today.
        public var coverageToday: CoverageToday? = nil
    }

    /// A stream's day so far: the share captured (0 to 1) and its largest gap.
    public struct CoverageToday: Codable, Sendable, Equatable {
        public var capturedShare: Double
        public var largestGap: CoverageGap?
    }

    /// A gap of the coverage ledger: its state (`quiet`, `lost`, ...) and when.
    public struct CoverageGap: Codable, Sendable, Equatable {
        public var state: String
        public var from: Date
        public var to: Date
        public var seconds: Double
    }

    /// The microphone's device in use: the chosen one, or the fallback while the chosen
    /// one is missing (docs/streams/microphone.md, "Choosing the device, and falling back").
    public struct CaptureDevice: Codable, Sendable, Equatable {
        /// The device capture is on; nil while none is open (the stream's reason says why).
        public var inUse: String?
        /// `[microphone] device`.
        public var chosen: String
        /// Capture is on `[microphone] fallback_device` because the chosen one is missing.
        public var onFallback: Bool
        public var reason: String
        /// Since when capture has been on `in_use`.
        public var since: Date?
    }

    public struct Clock: Codable, Sendable, Equatable {
        /// The kernel says the system clock is synchronised (NTP).
        public var synchronised: Bool
        /// `[daemon] trust_system_clock`.
        public var trustSystemClock: Bool
        /// Capture times from the system clock are believed now (synchronised, or trusted and after 2000).
        public var trusted: Bool
        /// Why the clock is not believed, when it is not.
        public var reason: String?
        /// Records held with provisional times, captured in the running boot (corrected once the clock is believed).
        public var heldRecords: Int
        /// Records held from earlier boots: their true time is unknown; they are kept, not sent.
        public var heldEarlierBoots: Int
        /// What this boot's true time is known from, kept in the database (a gpsd 3D fix), when anything.
        public var trueTimeFrom: String? = nil
    }

    public struct Uploader: Codable, Sendable, Equatable {
        /// `healthy`, `unhealthy`, `disabled` or `unknown`.
        public var liveness: String
        public var reason: String?
        public var lastAttemptAt: Date?
        public var lastSuccessAt: Date?
        public var lastErrorCode: String?
        public var lastErrorMeaning: String?
        public var authPausedUntil: Date?
        public var retryAt: Date?
        /// Failed upload attempts by error code, since the database was made.
        public var errors: [ErrorCount]? = nil
        /// Since when bodies go uncompressed although [server] gzip = true: the server
        /// answered a gzip body 400/415 and took the same batch uncompressed.
        public var uncompressedSince: Date? = nil
    }

    public struct ErrorCount: Codable, Sendable, Equatable {
        public var code: String
        public var count: Int64
    }

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.string(from: date))
        }
        return try StatusFormerNames.add(to: encoder.encode(self), formatting: encoder.outputFormatting)
    }

    public static func decode(_ data: Data) throws -> StatusReport {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = RFC3339.date(from: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not RFC 3339: \(text)"))
            }
            return date
        }
        return try decoder.decode(StatusReport.self, from: data)
    }
}
