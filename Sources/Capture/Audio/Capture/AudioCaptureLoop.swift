import AgentCore
import Foundation
import Logging
import Platform

/// The microphone's capture thread: reads blocks from the device `CaptureDeviceMachine`
/// picks (through the `AudioCapture` seam), hands them to the chunk assembly and the
/// chunks it finishes to the records. An overrun, a switch of device and a stop end the
/// chunk in progress; which device, when to open it and what that means is the machine's.
///
/// Capture thread only.
final class AudioCaptureLoop {
    private let config: MicrophoneConfig
    private let tuning: MicrophoneTuning
    private let captureFactory: AudioCaptureFactory
    /// Seconds on a clock that never jumps: when the device machine retries.
    private let monotonicClock: @Sendable () -> TimeInterval
    private var assembly: ChunkAssembly
    private var records: ChunkRecords
    private let journal: ChunkJournal
    private let report: CaptureDeviceReport
    private let status: MicrophoneStatus
    private let logger: Logger

    init(config: MicrophoneConfig, tuning: MicrophoneTuning, captureFactory: @escaping AudioCaptureFactory,
         monotonicClock: @escaping @Sendable () -> TimeInterval, assembly: ChunkAssembly, records: ChunkRecords,
         journal: ChunkJournal, report: CaptureDeviceReport, status: MicrophoneStatus, logger: Logger) {
        self.config = config
        self.tuning = tuning
        self.captureFactory = captureFactory
        self.monotonicClock = monotonicClock
        self.assembly = assembly
        self.records = records
        self.journal = journal
        self.report = report
        self.status = status
        self.logger = logger
    }

    /// Captures until `waker` is woken (by the stream's `stop()`), after writing what the
    /// journal kept from the last run.
    func run(until waker: Waker) {
        let buffer = UnsafeMutableBufferPointer<Int16>.allocate(capacity: tuning.readFrames)
        defer { buffer.deallocate() }
        records.writeRecovered(journal.recover())
        var devices = CaptureDeviceMachine(config: config, sampleRate: tuning.sampleRate, factory: captureFactory,
                                           retry: tuning.deviceRetry, chosenRetry: tuning.chosenDeviceRetry,
                                           clock: monotonicClock) { [self] event in
            if event == .runEnds {
                endRun()
            } else {
                report.apply(event)
            }
        }
        while true {
            // The journal's fsyncs, between two reads: after the last block's pages are in.
            journal.durability?.syncDue()
            if waker.isWoken {
                devices.release()
                return
            }
            // An unset clock does not stop capture: chunks timed from it are held with
            // their boot-clock time and corrected once the clock is set.
            let current: any AudioCapture
            switch devices.next() {
            case .read(let capture):
                current = capture
            case .wait(let seconds):
                _ = waker.wait(for: nil, timeout: seconds)
                continue
            }
            do throws(AudioCaptureError) {
                // Cleared before each read: a source that writes nothing (the ALSA file
                // plugin past the end of its input) must not replay the previous block.
                buffer.update(repeating: 0)
                switch try current.read(into: buffer) {
                case .frames(0):
                    continue
                case .frames(let count):
                    records.write(assembly.append(UnsafeBufferPointer(rebasing: buffer[0 ..< count]), pending: current.pendingFrames()))
                case .overrun:
                    let total = status.count(\.overruns)
                    logger.warning("microphone overrun: samples were lost; the chunk in progress ends here and the next starts after the gap",
                                   metadata: ["overruns": "\(total)"])
                    endRun()
                case .ended:
                    devices.inputEnded()
                }
            } catch {
                devices.readFailed(error)
            }
        }
    }

    private func endRun() {
        records.write(assembly.endRun())
    }
}
