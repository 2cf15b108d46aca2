import AgentCore
@testable import Capture
import Foundation
import Platform
import PlatformTestSupport
import Synchronization
import XCTest

/// The microphone's device machine on virtual time (`VirtualScheduler`), over microphones
/// the test plugs in and out: which device it opens, when, and what it reports, with no
/// thread, no sleep and no sound card.
final class CaptureDeviceMachineTests: XCTestCase {
    typealias Event = CaptureDeviceMachine.Event
    let chosen = "plughw:CARD=Mic"
    let fallback = "default"
    let retry = Backoff(base: 1, cap: 30)
    let chosenRetry: TimeInterval = 5

    /// A machine on `scheduler`'s clock that reports to `reports`.
    /// A test's microphones (those plugged in), its virtual clock and what the machine reports.
    func parts(plugged: Set<String>) -> (FakeMicrophones, VirtualScheduler, Reports) {
        (FakeMicrophones(plugged: plugged), VirtualScheduler(), Reports())
    }

    func makeMachine(_ microphones: FakeMicrophones, _ scheduler: VirtualScheduler, _ reports: Reports,
                     fallbackDevice: String? = nil) -> CaptureDeviceMachine {
        var config = MicrophoneConfig()
        config.device = chosen
        config.fallbackDevice = fallbackDevice ?? fallback
        return CaptureDeviceMachine(config: config, sampleRate: 16_000, factory: microphones.factory, retry: retry,
                                    chosenRetry: chosenRetry, clock: scheduler.monotonicSeconds,
                                    report: { reports.events.append($0) })
    }

    var fallbackReason: String {
        "fallback: the chosen device '\(chosen)' is missing (\(FakeMicrophones.missingDetail)); it is tried again every 5 s and used again when it returns"
    }
    var awayReason: String {
        "the chosen device '\(chosen)' is missing (\(FakeMicrophones.missingDetail)); it is tried again every 5 s"
    }

    func testThePluggedInChosenDeviceIsOpenedAndCaptureIsOnIt() throws {
        let (microphones, scheduler, reports) = parts(plugged: [chosen, fallback])
        var machine = makeMachine(microphones, scheduler, reports)

        XCTAssertEqual(try reading(machine.next()), chosen)
        XCTAssertEqual(machine.state, .onChosen)
        XCTAssertEqual(reports.take(), [.opened(device: chosen, settings: "16000 Hz mono S16_LE"),
                                        .inUse(chosen, reason: "the chosen device ([microphone] device)"),
                                        .liveness(.healthy)])
        scheduler.advance(by: 60)
        XCTAssertEqual(try reading(machine.next()), chosen)
        XCTAssertEqual(reports.take(), [], "reading on is nothing to report")
        XCTAssertEqual(microphones.attempts, [chosen], "opened once, the fallback never")
    }

    func testAChosenDeviceMissingAtTheStartFallsBackWithOneSwitch() throws {
        let (microphones, scheduler, reports) = parts(plugged: [fallback])
        var machine = makeMachine(microphones, scheduler, reports)

        XCTAssertEqual(try reading(machine.next()), fallback)
        XCTAssertEqual(machine.state, .onFallback(chosenDue: chosenRetry))
        XCTAssertEqual(reports.take(), [.opened(device: fallback, settings: "16000 Hz mono S16_LE"),
                                        .switched(to: fallback, reason: awayReason),
                                        .inUse(fallback, reason: fallbackReason),
                                        .liveness(.healthy)])
        XCTAssertEqual(microphones.attempts, [chosen, fallback])
    }

    func testTheChosenDeviceIsTakenBackAtItsRetryTimeAndNotBefore() throws {
        let (microphones, scheduler, reports) = parts(plugged: [fallback])
        var machine = makeMachine(microphones, scheduler, reports)
        XCTAssertEqual(try reading(machine.next()), fallback)
        _ = reports.take()

        scheduler.advance(by: 1)
        microphones.plugIn(chosen)
        scheduler.advance(by: chosenRetry - 1 - 0.001)
        XCTAssertEqual(try reading(machine.next()), fallback, "not yet due: capture stays on the fallback")
        XCTAssertEqual(microphones.attempts, [chosen, fallback], "the chosen device is not tried before its time")
        XCTAssertEqual(reports.take(), [])

        scheduler.advance(by: 0.002)
        let fallbackCapture = try XCTUnwrap(microphones.opened.last)
        XCTAssertEqual(try reading(machine.next()), chosen, "due: the chosen device is back and taken")
        XCTAssertEqual(machine.state, .onChosen)
        XCTAssertTrue(fallbackCapture.isClosed, "the fallback is released")
        XCTAssertEqual(reports.take(), [.opened(device: chosen, settings: "16000 Hz mono S16_LE"),
                                        .runEnds,
                                        .inUse(nil, reason: "no device open"),
                                        .switched(to: chosen, reason: "the chosen device is back"),
                                        .inUse(chosen, reason: "the chosen device ([microphone] device)")],
                       "the chunk in progress ends at the switch; one switch back")
    }

    func testAChosenDeviceStillMissingAtItsRetryIsTriedAgainAnIntervalLaterWithoutNoise() throws {
        let (microphones, scheduler, reports) = parts(plugged: [fallback])
        var machine = makeMachine(microphones, scheduler, reports)
        XCTAssertEqual(try reading(machine.next()), fallback)
        _ = reports.take()

        scheduler.advance(by: chosenRetry + 1)
        XCTAssertEqual(try reading(machine.next()), fallback)
        XCTAssertEqual(microphones.attempts, [chosen, fallback, chosen], "tried once at its time")
        XCTAssertEqual(machine.state, .onFallback(chosenDue: 2 * chosenRetry + 1), "next try an interval after this one")
        XCTAssertEqual(reports.take(), [], "no switch, no health change, no device change")
    }

    func testABusyOrForbiddenChosenDeviceIsNotStoodInForAndItsRetriesWaitAsBackoffSays() throws {
        for kind in [AudioCaptureError.Kind.busy, .permissionDenied] {
            let microphones = FakeMicrophones(plugged: [chosen, fallback])
            microphones.failing[chosen] = kind
            let scheduler = VirtualScheduler()
            let reports = Reports()
            var machine = makeMachine(microphones, scheduler, reports)
            let error = microphones.error(kind, chosen)

            // Exact in binary, so the virtual clock lands on each retry time exactly.
            let justBefore = 1.0 / 64
            var waits: [TimeInterval] = []
            for _ in 1...7 {
                let wait = try waiting(machine.next())
                waits.append(wait)
                XCTAssertEqual(machine.state, .waitingToRetry(until: scheduler.monotonicSeconds() + wait), "\(kind)")
                scheduler.advance(by: wait - justBefore)
                XCTAssertEqual(try waiting(machine.next()), justBefore, "\(kind): not retried before its time")
                scheduler.advance(by: justBefore)
            }
            XCTAssertEqual(waits, (1...7).map { retry.delay(afterFailures: $0) }, "\(kind)")
            XCTAssertEqual(waits, [1, 2, 4, 8, 16, 30, 30], "\(kind): doubling to the cap")
            XCTAssertEqual(microphones.attempts, Array(repeating: chosen, count: 7), "\(kind): tried once a wait, the fallback never")
            XCTAssertEqual(reports.take(), Array(repeating: .liveness(error.liveness), count: 7),
                           "\(kind): unhealthy with the device's own reason; nothing opened, no switch")

            microphones.failing[chosen] = nil
            XCTAssertEqual(try reading(machine.next()), chosen, "\(kind): fixed, it is opened at the next retry")
            XCTAssertEqual(reports.take().last, .liveness(.healthy))
            machine.readFailed(error)
            XCTAssertEqual(try waiting(machine.next()), 1, "\(kind): the open reset the failures, so the waits start over")
            XCTAssertFalse(microphones.attempts.contains(fallback), "\(kind): a read failing so is not stood in for either")
        }
    }

    func testAMissingFallbackLeavesTheStreamUnhealthyWithBothReasons() throws {
        let (microphones, scheduler, reports) = parts(plugged: [])
        var machine = makeMachine(microphones, scheduler, reports)

        XCTAssertEqual(try waiting(machine.next()), 1)
        let reason = "\(microphones.error(.notFound, chosen).description); the fallback '\(fallback)' cannot be opened either (\(FakeMicrophones.missingDetail))"
        XCTAssertEqual(reports.take(), [.liveness(.unhealthy(reason: reason))])
        XCTAssertEqual(machine.state, .waitingToRetry(until: 1))

        microphones.plugIn(fallback)
        scheduler.advance(by: 1)
        XCTAssertEqual(try reading(machine.next()), fallback)
        XCTAssertEqual(reports.take().last, .liveness(.healthy))
    }

    func testWithoutAFallbackAMissingChosenDeviceIsUnhealthyAndNothingElseIsOpened() throws {
        let (microphones, scheduler, reports) = parts(plugged: [fallback])
        var machine = makeMachine(microphones, scheduler, reports, fallbackDevice: "none")

        XCTAssertEqual(try waiting(machine.next()), 1)
        scheduler.advance(by: 1)
        XCTAssertEqual(try waiting(machine.next()), 2)
        XCTAssertEqual(microphones.attempts, [chosen, chosen], "only the chosen device is tried")
        let missing = microphones.error(.notFound, chosen).liveness
        XCTAssertEqual(reports.take(), [.liveness(missing), .liveness(missing)])

        microphones.plugIn(chosen)
        scheduler.advance(by: 2)
        XCTAssertEqual(try reading(machine.next()), chosen)
        XCTAssertFalse(reports.take().contains { if case .switched = $0 { true } else { false } }, "no switch: it never left")
    }

    func testTheChosenDeviceUnpluggedWhileCapturingGoesStraightToTheFallback() throws {
        let (microphones, scheduler, reports) = parts(plugged: [chosen, fallback])
        var machine = makeMachine(microphones, scheduler, reports)
        guard case .read(let capture) = machine.next() else { return XCTFail("on the chosen device") }
        _ = reports.take()

        microphones.unplug(chosen)
        do throws(AudioCaptureError) {
            XCTFail("an unplugged device does not read: \(try read(capture))")
        } catch {
            machine.readFailed(error)
        }
        XCTAssertEqual(machine.state, .closed, "to reopen at once, not waiting to retry")
        XCTAssertEqual(try reading(machine.next()), fallback, "with no time passed")
        XCTAssertEqual(machine.state, .onFallback(chosenDue: chosenRetry))
        XCTAssertEqual(reports.take(), [.runEnds, .inUse(nil, reason: "no device open"),
                                        .opened(device: fallback, settings: "16000 Hz mono S16_LE"),
                                        .switched(to: fallback, reason: awayReason),
                                        .inUse(fallback, reason: fallbackReason),
                                        .liveness(.healthy)], "never unhealthy on the way")
    }

    func testTheFallbackLostWhileCapturingWaitsAndReopensWithoutASecondSwitch() throws {
        let (microphones, scheduler, reports) = parts(plugged: [fallback])
        var machine = makeMachine(microphones, scheduler, reports)
        XCTAssertEqual(try reading(machine.next()), fallback)
        _ = reports.take()

        machine.readFailed(AudioCaptureError(kind: .failed, device: fallback, detail: "snd_pcm_readi: Input/output error"))
        XCTAssertEqual(try waiting(machine.next()), 1, "a failing fallback waits as any failing device")
        scheduler.advance(by: 1)
        XCTAssertEqual(try reading(machine.next()), fallback)
        let events = reports.take()
        XCTAssertFalse(events.contains { if case .switched = $0 { true } else { false } }, "back on the same device: \(events)")
        XCTAssertEqual(events.last, .liveness(.healthy))

        microphones.plugIn(chosen)
        machine.inputEnded()
        scheduler.advance(by: 1)
        XCTAssertEqual(try reading(machine.next()), chosen)
        XCTAssertTrue(reports.take().contains(.switched(to: chosen, reason: "the chosen device is back")),
                      "the chosen device opened after the fallback is a switch back")
    }

    func testAnEndedInputIsUnhealthyAndReopenedAfterTheFirstBackoffStep() throws {
        let (microphones, scheduler, reports) = parts(plugged: [chosen])
        var machine = makeMachine(microphones, scheduler, reports, fallbackDevice: "none")
        var waits: [TimeInterval] = []
        for _ in 1...3 {
            XCTAssertEqual(try reading(machine.next()), chosen)
            machine.inputEnded()
            XCTAssertEqual(reports.take().suffix(3), [.runEnds, .inUse(nil, reason: "no device open"),
                                                      .liveness(.unhealthy(reason: "capture input from '\(chosen)' ended; retrying"))])
            let wait = try waiting(machine.next())
            waits.append(wait)
            scheduler.advance(by: wait)
        }
        XCTAssertEqual(waits, [1, 1, 1], "each open resets the failures: an input that opens and ends waits the first step")
    }

    func testReleaseEndsTheRunAndClosesTheDevice() throws {
        let (microphones, scheduler, reports) = parts(plugged: [chosen])
        var machine = makeMachine(microphones, scheduler, reports)
        XCTAssertEqual(try reading(machine.next()), chosen)
        _ = reports.take()
        machine.release()
        XCTAssertEqual(machine.state, .closed)
        XCTAssertEqual(microphones.opened.map(\.isClosed), [true])
        XCTAssertEqual(reports.take(), [.runEnds, .inUse(nil, reason: "no device open")])
    }

    // MARK: Helpers

    /// The device a step reads from; fails the test when it waits instead.
    func reading(_ step: CaptureDeviceMachine.Step, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        guard case .read(let capture) = step, let microphone = capture as? FakeMicrophone else {
            XCTFail("a read, not \(step)", file: file, line: line)
            throw StepMismatch()
        }
        return microphone.device
    }

    /// How long a step waits; fails the test when it reads instead.
    func waiting(_ step: CaptureDeviceMachine.Step, file: StaticString = #filePath, line: UInt = #line) throws -> TimeInterval {
        guard case .wait(let seconds) = step else {
            XCTFail("a wait, not \(step)", file: file, line: line)
            throw StepMismatch()
        }
        return seconds
    }

    struct StepMismatch: Error {}

    func read(_ capture: any AudioCapture) throws(AudioCaptureError) -> CaptureRead {
        let buffer = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 320)
        defer { buffer.deallocate() }
        return try capture.read(into: buffer)
    }

    /// What the machine reported since the last `take()`.
    final class Reports {
        var events: [Event] = []
        func take() -> [Event] {
            defer { events = [] }
            return events
        }
    }
}

/// Microphones the test plugs in and out. Opening one that is not plugged in fails as
/// ALSA fails for a missing card (`.notFound`); one given a failure in `failing` fails
/// with that; a read from one unplugged since it was opened fails as a pulled USB card.
final class FakeMicrophones: Sendable {
    static let missingDetail = "snd_pcm_open: No such device"

    private struct State {
        var plugged: Set<String>
        var failing: [String: AudioCaptureError.Kind] = [:]
        var attempts: [String] = []
        var opened: [FakeMicrophone] = []
    }
    private let state: Mutex<State>

    init(plugged: Set<String>) {
        state = Mutex(State(plugged: plugged))
    }

    func plugIn(_ device: String) { state.withLock { _ = $0.plugged.insert(device) } }
    func unplug(_ device: String) { state.withLock { _ = $0.plugged.remove(device) } }
    func isPlugged(_ device: String) -> Bool { state.withLock { $0.plugged.contains(device) } }

    var failing: [String: AudioCaptureError.Kind] {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }
    /// Every device an open was tried on, in order.
    var attempts: [String] { state.withLock { $0.attempts } }
    var opened: [FakeMicrophone] { state.withLock { $0.opened } }

    func error(_ kind: AudioCaptureError.Kind, _ device: String) -> AudioCaptureError {
        AudioCaptureError(kind: kind, device: device, detail: kind == .notFound ? Self.missingDetail : "snd_pcm_open: \(kind)")
    }

    var factory: AudioCaptureFactory {
        { [self] device, sampleRate throws(AudioCaptureError) in
            let failure = state.withLock { state -> AudioCaptureError.Kind? in
                state.attempts.append(device)
                return state.failing[device] ?? (state.plugged.contains(device) ? nil : .notFound)
            }
            if let failure { throw error(failure, device) }
            let microphone = FakeMicrophone(device: device, sampleRate: sampleRate, microphones: self)
            state.withLock { $0.opened.append(microphone) }
            return microphone
        }
    }
}

/// One open fake microphone: 20 ms of silence a read, until it is unplugged.
final class FakeMicrophone: AudioCapture, @unchecked Sendable {
    // @unchecked: read and closed on the test's thread only; kept in `FakeMicrophones`'
    // Mutex so the test can see it was closed.
    let device: String
    let sampleRate: Int
    private let microphones: FakeMicrophones
    private(set) var isClosed = false

    init(device: String, sampleRate: Int, microphones: FakeMicrophones) {
        self.device = device
        self.sampleRate = sampleRate
        self.microphones = microphones
    }

    func read(into buffer: UnsafeMutableBufferPointer<Int16>) throws(AudioCaptureError) -> CaptureRead {
        guard !isClosed, microphones.isPlugged(device) else {
            throw microphones.error(.notFound, device)
        }
        let count = min(buffer.count, sampleRate / 50)
        buffer.update(repeating: 0)
        return .frames(count)
    }

    func pendingFrames() -> Int { 0 }

    func close() { isClosed = true }
}
