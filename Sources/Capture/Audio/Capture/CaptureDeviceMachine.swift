import AgentCore
import Foundation
import Platform

/// Which capture device the microphone stream reads from, and when it opens one: the
/// chosen device (`[microphone] device`), the fallback while the chosen one is missing
/// (tried again every `chosenRetry` seconds, and taken back when it returns), and waits
/// that grow as `retry` says after failures (docs/streams/microphone.md, "Choosing the
/// device, and falling back").
///
/// It opens devices through the capture seam and makes known what each transition means,
/// in order, through `report`: the stream counts, logs and shows it; a test records it.
/// Time is read from `clock` (monotonic seconds), so a test runs it on virtual time.
/// Capture thread only.
struct CaptureDeviceMachine {
    enum State: Equatable {
        /// No device open and none waited for: the next step opens one (at the start,
        /// after `release()`, or when the chosen device went away with a fallback to go to).
        case closed
        /// Capturing from the chosen device.
        case onChosen
        /// Capturing from the fallback; the chosen device is tried again at `chosenDue`.
        case onFallback(chosenDue: TimeInterval)
        /// No device open after a failure; the next attempt is at `until`.
        case waitingToRetry(until: TimeInterval)
    }

    /// What a transition means for the stream, in the order it happens.
    enum Event: Equatable {
        /// `device` was opened (a device open, counted and logged).
        case opened(device: String, settings: String)
        /// The chunk in progress ends here: before its device is released or replaced.
        case runEnds
        /// Capture moved to `device` from the other one (counted; logged once per switch).
        case switched(to: String, reason: String)
        /// The device in use (nil: none open) and why: `status`'s device detail.
        case inUse(String?, reason: String)
        case liveness(Liveness)
    }

    /// What the capture loop does next.
    enum Step {
        /// Read the next block from this device.
        case read(any AudioCapture)
        /// No device is open: wait this many seconds (unless stopped), then ask again.
        case wait(TimeInterval)
    }

    let chosen: String
    /// nil: no fallback (`fallback_device = ""` or `"none"`, or the chosen device itself).
    let fallback: String?
    private(set) var state = State.closed
    private let sampleRate: Int
    private let factory: AudioCaptureFactory
    private let retry: Backoff
    private let chosenRetry: TimeInterval
    private let clock: () -> TimeInterval
    private let report: (Event) -> Void
    /// The device read from while `state` is `.onChosen` or `.onFallback`.
    private var capture: (any AudioCapture)?
    /// Failed attempts in a row: the retry's wait grows with them.
    private var failures = RetryCounter()
    /// Whether the device last opened was the fallback, kept while none is open: opening
    /// it again is no switch, opening the chosen one is the switch back.
    private var awayFromChosen = false

    private static let chosenReason = "the chosen device ([microphone] device)"
    private static let backReason = "the chosen device is back"

    init(config: MicrophoneConfig, sampleRate: Int, factory: @escaping AudioCaptureFactory, retry: Backoff,
         chosenRetry: TimeInterval, clock: @escaping () -> TimeInterval, report: @escaping (Event) -> Void) {
        chosen = config.device
        fallback = config.fallback
        self.sampleRate = sampleRate
        self.factory = factory
        self.retry = retry
        self.chosenRetry = chosenRetry
        self.clock = clock
        self.report = report
    }

    // MARK: Transitions

    /// The device to read from, opening one when none is open and it is time to; while on
    /// the fallback and the chosen device is due, that one is tried first.
    mutating func next() -> Step {
        switch state {
        case .onChosen:
            break
        case .onFallback(let chosenDue):
            if clock() >= chosenDue { tryChosen() }
        case .closed:
            open()
        case .waitingToRetry(let until):
            if clock() >= until { open() }
        }
        if let capture { return .read(capture) }
        // An open that failed left the machine waiting; it is never closed here.
        guard case .waitingToRetry(let until) = state else { return .wait(0) }
        return .wait(max(0, until - clock()))
    }

    /// A read failed (the device went away, broke or stalled). The chosen device lost as
    /// missing goes straight to the fallback; anything else waits to retry.
    mutating func readFailed(_ error: AudioCaptureError) {
        let wasOnChosen = state == .onChosen
        release()
        if wasOnChosen && fallsBack(after: error) { return }
        failed(error.liveness)
    }

    /// The input has no more samples (a recording; a live device never ends).
    mutating func inputEnded() {
        release()
        failed(.unhealthy(reason: "capture input from '\(chosen)' ended; retrying"))
    }

    /// Stop, or the device must go: the chunk in progress ends and the device is closed.
    mutating func release() {
        report(.runEnds)
        capture?.close()
        capture = nil
        state = .closed
        report(.inUse(nil, reason: "no device open"))
    }

    // MARK: Steps

    /// Only a missing device is stood in for: a busy or forbidden one is the person's to
    /// fix, and capturing from another microphone would hide it.
    private func fallsBack(after error: AudioCaptureError) -> Bool {
        fallback != nil && error.kind == .notFound
    }

    /// The chosen device, else the fallback while the chosen one is missing.
    private mutating func open() {
        do throws(AudioCaptureError) {
            try openChosen()
            failures.succeeded()
            report(.liveness(.healthy))
        } catch {
            guard fallsBack(after: error), let fallback else {
                failed(error.liveness)
                return
            }
            do throws(AudioCaptureError) {
                capture = try open(fallback)
            } catch let fallbackError {
                failed(.unhealthy(reason: "\(error.description); the fallback '\(fallbackError.device)' cannot be opened either (\(fallbackError.detail))",
                                  code: error.code ?? fallbackError.code))
                return
            }
            state = .onFallback(chosenDue: clock() + chosenRetry)
            if !awayFromChosen {
                awayFromChosen = true
                report(.switched(to: fallback, reason: "the chosen device '\(chosen)' is missing (\(error.detail)); it is tried again every \(retrySeconds) s"))
            }
            report(.inUse(fallback, reason: "fallback: the chosen device '\(chosen)' is missing (\(error.detail)); it is tried again every \(retrySeconds) s and used again when it returns"))
            failures.succeeded()
            report(.liveness(.healthy))
        }
    }

    /// While on the fallback: the chosen device, if it is back, replaces the fallback (the
    /// chunk in progress ends at the switch; both are open for that moment, so the gap is
    /// a read at most); if not, it is tried again `chosenRetry` seconds on.
    private mutating func tryChosen() {
        // Without alsa-lib's own line for each attempt at a device still unplugged
        // (docs/streams/microphone.md): the switch is what the log says.
        let opened = ALSADiagnostics.dropped { () -> (any AudioCapture)? in
            do throws(AudioCaptureError) {
                return try factory(chosen, sampleRate)
            } catch {
                return nil
            }
        }
        guard let opened else {
            state = .onFallback(chosenDue: clock() + chosenRetry)
            return
        }
        report(.opened(device: chosen, settings: opened.settingsDescription))
        release()
        capture = opened
        state = .onChosen
        awayFromChosen = false
        report(.switched(to: chosen, reason: Self.backReason))
        report(.inUse(chosen, reason: Self.chosenReason))
    }

    private mutating func openChosen() throws(AudioCaptureError) {
        capture = try open(chosen)
        state = .onChosen
        if awayFromChosen {
            awayFromChosen = false
            report(.switched(to: chosen, reason: Self.backReason))
        }
        report(.inUse(chosen, reason: Self.chosenReason))
    }

    /// Opens `device` and reports it.
    private func open(_ device: String) throws(AudioCaptureError) -> any AudioCapture {
        let opened = try factory(device, sampleRate)
        report(.opened(device: device, settings: opened.settingsDescription))
        return opened
    }

    /// A failure: unhealthy with `liveness`, and the next attempt after the backoff's wait.
    private mutating func failed(_ liveness: Liveness) {
        report(.liveness(liveness))
        state = .waitingToRetry(until: clock() + failures.failed(backoff: retry))
    }

    private var retrySeconds: Int { Int(chosenRetry.rounded()) }
}
