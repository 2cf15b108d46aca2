import AgentCore
import Capture
import Foundation
import Logging
import Upload

/// The real wiring: gpsd, ALSA and health sources into the queue; the libcurl uploader
/// out of it.
public struct LiveComponents: ComponentFactory {
    public init() {}

    public func makeStream(_ stream: StreamName, config: AgentConfig, queue: AgentDatabase, logger: Logger) -> any CaptureStream {
        let clockTrust = ClockTrust.live(trustSystemClock: config.daemon.trustSystemClock)
        switch stream {
        case .location:
            return LocationStream(config: config.location, sink: queue, logger: logger, clockTrust: clockTrust)
        case .microphone:
            return MicrophoneStream(config: config.microphone, sink: queue, logger: logger, clockTrust: clockTrust,
                                    journal: .init(directory: AudioJournal.directory(forDatabase: queue.path),
                                                   knownRecords: queue))
        case .health:
            return HealthStream(config: config.health, queue: queue, clockTrust: clockTrust, logger: logger)
        }
    }

    public func makeUploader(config: AgentConfig, queue: AgentDatabase, logger: Logger) -> any UploadComponent {
        Uploader(server: config.server, upload: config.upload, store: queue, logger: logger,
                 uploadLock: FileLock.upload(databasePath: queue.path))
    }
}

extension Uploader: UploadComponent {}
