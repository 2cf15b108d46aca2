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
    /// The quiet hours and muted places: audio they close is never encoded.
    private let gate: MicrophoneGate?

    init(config: MicrophoneConfig, tuning: MicrophoneTuning, captureFactory: @escaping AudioCaptureFactory,
         monotonicClock: @escaping @Sendable () -> TimeInterval, assembly: ChunkAssembly, records: ChunkRecords,
         journal: ChunkJournal, report: CaptureDeviceReport, status: MicrophoneStatus, gate: MicrophoneGate? = nil,
         logger: Logger) {
        self.gate = gate
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
                    append(UnsafeBufferPointer(rebasing: buffer[0 ..< count]), pending: current.pendingFrames())
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

    /// Hands a block to the assembly, less what the gate closes: the run ends at the
    /// boundary itself and the rest of the block, like every block while the gate stays
    /// closed, is dropped before it reaches an encoder or the journal; where the gate opens
    /// again, a new run begins.
    private func append(_ block: UnsafeBufferPointer<Int16>, pending: Int) {
        guard let gate else {
            records.write(assembly.append(block, pending: pending))
            return
        }
        let (start, end) = assembly.times(of: block.count, pending: pending)
        guard let closed = gate.closedFrom(start, to: end) else {
            records.write(assembly.append(block, pending: pending))
            return
        }
        let kept = min(block.count, max(0, Int((closed.timeIntervalSince(start) * Double(tuning.sampleRate)).rounded(.down))))
        if kept > 0 {
            // The kept part is the block's start: what the device still holds includes the rest.
            records.write(assembly.append(UnsafeBufferPointer(rebasing: block[0 ..< kept]), pending: pending + block.count - kept))
        }
        if assembly.isRunning { endRun() }
        // The gate may open again within the block (the quiet hours end): a new run begins
        // there, with the block's tail (timed from its end, as every block is).
        if let reopened = gate.openFrom(closed, to: end) {
            let tail = min(block.count, max(0, Int((end.timeIntervalSince(reopened) * Double(tuning.sampleRate)).rounded(.down))))
            if tail > 0 {
                records.write(assembly.append(UnsafeBufferPointer(rebasing: block[(block.count - tail)...]), pending: pending))
            }
        }
    }
}
