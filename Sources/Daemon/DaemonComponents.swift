import AgentCore
import Capture
import Foundation
import Logging
import Upload

/// What the daemon needs of the uploader.
public protocol UploadComponent: AnyObject, Sendable {
    func start()
    func stop()
    func liveness() -> Liveness
    func updateServer(_ server: ServerConfig, box: BoxConfig)
    /// The network came back after an outage: forget the backoff it caused, send now.
    func networkReturned(_ why: String)
    /// A cycle now (the machine woke from sleep).
    func cycleNow(_ why: String)
    /// The power policy: upload interval multiplied by `factor`; scheduled uploads held.
    func setPower(factor: Int, postponed: Bool)
    /// The connection is metered (or no longer): scheduled uploads hold back what
    /// `[upload] on_metered` says; back on an unmetered one they send it at once.
    func setMetered(_ metered: Bool)
    /// `handler` runs when an upload succeeds after an outage (the daemon asks the server
    /// for its stream switches then).
    func onRecovery(_ handler: @escaping @Sendable () -> Void)
}

extension UploadComponent {
    public func onRecovery(_ handler: @escaping @Sendable () -> Void) {}
}

/// Builds the parts the daemon runs; the live one wires the real streams and uploader,
/// tests may wire the same real parts differently (another gpsd port, say).
public protocol ComponentFactory: Sendable {
    /// A new capture stream for `stream` (the daemon asks only for enabled streams).
    func makeStream(_ stream: StreamName, config: AgentConfig, database: AgentDatabase, logger: Logger) -> any CaptureStream
    /// The same, with the microphone's gate (quiet hours, muted places) for the streams
    /// that use it: the microphone cuts its audio by it, the location stream tells it fixes.
    func makeStream(_ stream: StreamName, config: AgentConfig, database: AgentDatabase, gate: MicrophoneGate,
                    logger: Logger) -> any CaptureStream
    func makeUploader(config: AgentConfig, database: AgentDatabase, logger: Logger) -> any UploadComponent
    /// What tells whether the connection is metered; nil: nothing does (uploads then treat
    /// every network alike, as without NetworkManager).
    func makeMeteredWatch(logger: Logger) -> (any MeteredNetworkWatch)?
    /// Where desktop notices go; nil: nowhere.
    func makeNoticeSink(logger: Logger) -> (any NoticeSink)?
}

extension ComponentFactory {
    public func makeStream(_ stream: StreamName, config: AgentConfig, database: AgentDatabase, gate: MicrophoneGate,
                           logger: Logger) -> any CaptureStream {
        makeStream(stream, config: config, database: database, logger: logger)
    }

    public func makeMeteredWatch(logger: Logger) -> (any MeteredNetworkWatch)? { nil }
    public func makeNoticeSink(logger: Logger) -> (any NoticeSink)? { nil }
}

/// The uploader as the supervisor sees it: its health is stored for `status`, but it is
/// never restarted, because it recovers by itself and a restart would skip its backoff.
final class UploaderSupervision: SupervisedComponent, Sendable {
    let uploader: any UploadComponent
    init(_ uploader: any UploadComponent) { self.uploader = uploader }
    var componentName: String { "uploader" }
    func liveness() -> Liveness { uploader.liveness() }
    func restart() {}
}
