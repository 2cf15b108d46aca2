import AgentCore
import Foundation
import Logging
import Platform

/// Makes known what `CaptureDeviceMachine` reports: counted and shown through
/// `MicrophoneStatus` (`status`'s device, the capture's liveness) and said in the log.
/// The end of the chunk in progress (`.runEnds`) is the capture loop's.
struct CaptureDeviceReport {
    /// `[microphone] device`: a switch back to it is a notice, away from it a warning.
    let chosen: String
    let status: MicrophoneStatus
    let clock: any WallClock
    let logger: Logger

    func apply(_ event: CaptureDeviceMachine.Event) {
        switch event {
        case .opened(let device, let settings):
            status.count(\.opens)
            logger.info("microphone capture started", metadata: ["device": "\(device)", "settings": "\(settings)"])
        case .runEnds:
            return
        case .switched(let device, let reason):
            status.count(\.switches)
            logger.log(level: device == chosen ? .notice : .warning,
                       "microphone switched to '\(device)': \(reason); the chunk in progress ended at the switch",
                       metadata: ["device": "\(device)", "chosen": "\(chosen)"])
        case .inUse(let device, let reason):
            status.setDevice(device, reason: reason, at: clock.now())
        case .liveness(let liveness):
            let previous = status.setCaptureLiveness(liveness)
            guard previous != liveness else { return }
            if case .unhealthy(let reason, _) = liveness {
                logger.warning("microphone unhealthy: \(reason)")
            } else if !previous.isHealthy {
                logger.info("microphone healthy")
            }
        }
    }
}
