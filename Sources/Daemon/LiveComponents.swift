import AgentCore
import Capture
import Foundation
import Logging
import Upload

/// The real wiring: location (gpsd or GeoClue), ALSA and health sources into the queue;
/// the libcurl uploader out of it; NetworkManager on the system bus for metering, the
/// session bus for notices.
public struct LiveComponents: ComponentFactory {
    public init() {}

    public func makeStream(_ stream: StreamName, config: AgentConfig, database: AgentDatabase, logger: Logger) -> any CaptureStream {
        build(stream, config: config, database: database, gate: nil, logger: logger)
    }

    public func makeStream(_ stream: StreamName, config: AgentConfig, database: AgentDatabase, gate: MicrophoneGate,
                           logger: Logger) -> any CaptureStream {
        build(stream, config: config, database: database, gate: gate, logger: logger)
    }

    private func build(_ stream: StreamName, config: AgentConfig, database: AgentDatabase, gate: MicrophoneGate?,
                            logger: Logger) -> any CaptureStream {
        let clockTrust = ClockTrust.live(trustSystemClock: config.daemon.trustSystemClock)
        switch stream {
        case .location:
            var tuning = LocationTuning()
            // geoclue_mode "auto" reads the same power supply as [power], and never on battery without it.
            tuning.powerSupplyPath = config.power.enabled ? config.power.sysfsPath : nil
            var onFix: (@Sendable (Double, Double) -> Void)?
            if let gate { onFix = { latitude, longitude in gate.observe(latitude: latitude, longitude: longitude) } }
            return LocationStream(config: config.location, queue: database.recordQueue, logger: logger, tuning: tuning,
                                  clockTrust: clockTrust, onFix: onFix)
        case .microphone:
            return MicrophoneStream(config: config.microphone, queue: database.recordQueue, logger: logger, clockTrust: clockTrust,
                                    journal: .init(directory: AudioJournal.directory(forDatabase: database.path),
                                                   queue: database.recordQueue), gate: gate)
        case .health:
            return HealthStream(config: config.health, database: database, clockTrust: clockTrust, logger: logger)
        }
    }

    public func makeUploader(config: AgentConfig, database: AgentDatabase, logger: Logger) -> any UploadComponent {
        Uploader(server: config.server, box: config.box, upload: config.upload, queue: database.recordQueue, logger: logger,
                 makeTransport: MemoryFootprint.droppingPagesFirst(CurlTransport.factory),
                 uploadLock: FileLock.upload(databasePath: database.path))
    }

    public func makeMeteredWatch(logger: Logger) -> (any MeteredNetworkWatch)? {
        NetworkManagerMeteredWatch(bus: .system, logger: logger)
    }

    public func makeNoticeSink(logger: Logger) -> (any NoticeSink)? {
        DesktopNotifier(bus: .session, logger: logger)
    }
}

extension Uploader: UploadComponent {}
