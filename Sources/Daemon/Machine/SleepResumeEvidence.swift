import Foundation

/// What logind answered when asked, at a maintenance round, whether it still prepares for
/// sleep (its `PreparingForSleep` property).
enum LogindSleepAnswer: Sendable, Equatable {
    case preparingForSleep(Bool)
    /// logind is not on the bus (it ended, or restarts).
    case absent
    /// It is there but did not answer (a time-out, a refusal): why.
    case failed(String)
}

/// What the agent makes of the machine while it believes it asleep: after
/// `PrepareForSleep(true)` some systemd releases never send `(false)` (after hibernation,
/// or suspend-then-hibernate), so the maintenance round asks logind's property and looks
/// at the suspend detector's evidence (the time the machine spent suspended since the
/// signal) instead of waiting for a signal that may never come
/// (docs/laptop.md, "Sleep and wake").
enum SleepResumeEvidence: Sendable, Equatable {
    /// Still before the suspend, or logind still sleeping: capture stays held.
    case asleep
    /// Awake: capture resumes as after the signal. Why, for the log.
    case awake(String)
    /// The machine evidently resumed, yet logind says it still prepares for sleep, or
    /// cannot say: capture stays held (logind's sleep may still be going on: the short
    /// wake of a suspend-then-hibernate), shown as a fault with this reason.
    case heldAwake(String)

    /// A suspend shorter than this is the two clocks read a moment apart, not a suspend.
    static let suspendSeen: Double = 2

    static func judge(_ answer: LogindSleepAnswer, suspendedSeconds: Double) -> SleepResumeEvidence {
        let slept = suspendedSeconds >= suspendSeen
        let after = slept ? " after \(Int(suspendedSeconds)) s suspended" : ""
        switch answer {
        case .preparingForSleep(false):
            return .awake("logind's PreparingForSleep is false\(after), but no PrepareForSleep(false) came")
        case .preparingForSleep(true):
            guard slept else { return .asleep }
            return .heldAwake("the machine resumed\(after), but logind still says it prepares for sleep: capture waits for logind's word")
        case .absent:
            // Nobody is left to end the sleep or to start another one.
            return .awake("logind left the system bus while the machine slept")
        case .failed(let why):
            guard slept else {
                return .heldAwake("logind does not say whether the machine still sleeps (\(why)): capture waits for logind's word")
            }
            return .awake("logind does not answer (\(why)), and the machine resumed\(after)")
        }
    }
}
