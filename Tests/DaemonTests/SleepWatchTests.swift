import AgentCore
import DBus
import Foundation
import Logging
import PlatformTestSupport
import Synchronization
import TestRigs
import XCTest
@testable import Daemon

/// The sleep watch when logind does not announce the resume (docs/laptop.md, "Sleep and
/// wake"), against python-dbusmock's logind on a private system bus and a
/// `VirtualScheduler` for the suspend detector's clocks: `PreparingForSleep` turning false
/// without `PrepareForSleep(false)`, a resume logind still denies, and logind restarting
/// while the machine sleeps.
final class SleepWatchTests: XCTestCase {
    private final class Seen: Sendable {
        let sleeps = Mutex(0)
        let wakes = Mutex(0)
        let heldAwake = Mutex<[String?]>([])
    }

    private func watch(_ bus: DBusRig, clocks: VirtualScheduler, seen: Seen) -> SleepWatch {
        SleepWatch(bus: .address(bus.address), clocks: clocks, logger: Logger(label: "test")) {
            seen.sleeps.withLock { $0 += 1 }
        } onWake: {
            seen.wakes.withLock { $0 += 1 }
        } onHeldAwake: { reason in
            seen.heldAwake.withLock { $0.append(reason) }
        }
    }

    /// Started, holding the lock, then asleep by logind's signal with the lock released.
    private func asleep(_ bus: DBusRig, logind: DBusMockRig, clocks: VirtualScheduler, seen: Seen) throws -> SleepWatch {
        let watch = watch(bus, clocks: clocks, seen: seen)
        watch.start()
        try waitUntil("the delay lock", timeout: 10) { try logind.holdsSleepDelay() }
        try logind.prepareForSleep(true)
        try waitUntil("the lock released for sleep", timeout: 10) { try !logind.holdsSleepDelay() }
        XCTAssertEqual(seen.sleeps.withLock { $0 }, 1)
        XCTAssertTrue(watch.isAsleep)
        return watch
    }

    func testTheEvidenceIsJudgedLogindFirstThenTheSuspend() {
        XCTAssertEqual(SleepResumeEvidence.judge(.preparingForSleep(true), suspendedSeconds: 0), .asleep,
                       "between the signal and the suspend")
        guard case .awake = SleepResumeEvidence.judge(.preparingForSleep(false), suspendedSeconds: 0) else {
            return XCTFail("logind says it no longer prepares for sleep: awake")
        }
        guard case .heldAwake(let reason) = SleepResumeEvidence.judge(.preparingForSleep(true), suspendedSeconds: 3_600) else {
            return XCTFail("resumed while logind still sleeps: held, as a fault")
        }
        XCTAssertTrue(reason.contains("after 3600 s suspended"), reason)
        guard case .awake = SleepResumeEvidence.judge(.absent, suspendedSeconds: 0) else {
            return XCTFail("no logind: nobody to end the sleep")
        }
        guard case .awake = SleepResumeEvidence.judge(.failed("a time-out"), suspendedSeconds: 60) else {
            return XCTFail("no answer, but a suspend came and went")
        }
        guard case .heldAwake = SleepResumeEvidence.judge(.failed("a time-out"), suspendedSeconds: 0.5) else {
            return XCTFail("no answer and no suspend: held, as a fault")
        }
    }

    /// A stream held for sleep is `asleep` (no fault, no restart), a fault while the
    /// watch sees the machine awake, and itself again after the wake.
    func testAStreamHeldForSleepIsAsleepThenAFaultWhileTheMachineSeemsAwake() {
        let counts = VirtualTimeDaemonTests.Counts()
        let supervisor = StreamSupervisor(stream: .location, paused: false, logger: Logger(label: "test")) {
            VirtualTimeDaemonTests.CountingStream(.location, counts: counts)
        }
        supervisor.start()
        XCTAssertEqual(supervisor.liveness(), .healthy)
        supervisor.sleep()
        XCTAssertEqual(supervisor.liveness(), .asleep)
        XCTAssertFalse(supervisor.liveness().isUnhealthy, "asleep is no fault")
        supervisor.restart()
        XCTAssertFalse(counts.running(.location), "not restarted while asleep")
        supervisor.heldForSleep(whileAwake: "the machine resumed")
        XCTAssertEqual(supervisor.liveness(), .unhealthy(reason: "the machine resumed"))
        supervisor.heldForSleep(whileAwake: nil)
        XCTAssertEqual(supervisor.liveness(), .asleep)
        supervisor.heldForSleep(whileAwake: "again")
        supervisor.wake()
        XCTAssertEqual(supervisor.liveness(), .healthy)
        XCTAssertTrue(counts.running(.location))
        supervisor.heldForSleep(whileAwake: "late")
        XCTAssertEqual(supervisor.liveness(), .healthy, "awake: a late sign changes nothing")
        supervisor.stop()
    }

    func testASilentResumeIsTakenAtTheNextCheckWithTheLockTakenAgain() throws {
        let bus = try DBusRig(.system)
        let logind = try DBusMockRig.logind(on: bus)
        let clocks = VirtualScheduler()
        let seen = Seen()
        let watch = try asleep(bus, logind: logind, clocks: clocks, seen: seen)
        defer { watch.stop() }
        XCTAssertTrue(try logind.preparingForSleep())

        // Before the suspend: logind still prepares, and the check leaves it asleep.
        // (An answer on a private bus comes within milliseconds.)
        watch.checkResume()
        Thread.sleep(forTimeInterval: 1)
        XCTAssertEqual(seen.wakes.withLock { $0 }, 0, "still asleep while logind prepares for sleep")
        XCTAssertEqual(seen.heldAwake.withLock { $0 }, [], "no fault before the suspend")
        XCTAssertTrue(watch.isAsleep)

        clocks.suspend(for: 1_800)
        try logind.resumeWithoutSignal()
        XCTAssertFalse(try logind.preparingForSleep())
        watch.checkResume()
        try waitUntil("the resume taken without the signal", timeout: 10) { seen.wakes.withLock { $0 } == 1 }
        try waitUntil("the delay lock taken again", timeout: 10) { try logind.holdsSleepDelay() }
        XCTAssertFalse(watch.isAsleep)

        // Awake, a check asks nothing and changes nothing.
        watch.checkResume()
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(seen.wakes.withLock { $0 }, 1)
    }

    func testAResumeLogindStillDeniesIsAFaultUntilLogindEndsTheSleep() throws {
        let bus = try DBusRig(.system)
        let logind = try DBusMockRig.logind(on: bus)
        let clocks = VirtualScheduler()
        let seen = Seen()
        let watch = try asleep(bus, logind: logind, clocks: clocks, seen: seen)
        defer { watch.stop() }

        clocks.suspend(for: 600)
        watch.checkResume()
        try waitUntil("the held capture shown as a fault", timeout: 10) { seen.heldAwake.withLock { $0 }.count == 1 }
        let reason = try XCTUnwrap(seen.heldAwake.withLock { $0 }.first ?? nil)
        XCTAssertTrue(reason.contains("logind still says it prepares for sleep"), reason)
        XCTAssertEqual(seen.wakes.withLock { $0 }, 0, "logind's sleep may still go on: capture stays held")
        XCTAssertFalse(try logind.holdsSleepDelay())

        try logind.resumeWithoutSignal()
        watch.checkResume()
        try waitUntil("the resume", timeout: 10) { seen.wakes.withLock { $0 } == 1 }
        try waitUntil("the delay lock taken again", timeout: 10) { try logind.holdsSleepDelay() }
    }

    func testLogindRestartingWhileAsleepIsAskedAtOnce() throws {
        let bus = try DBusRig(.system)
        let logind = try DBusMockRig.logind(on: bus)
        let clocks = VirtualScheduler()
        let seen = Seen()
        let watch = try asleep(bus, logind: logind, clocks: clocks, seen: seen)
        defer { watch.stop() }

        // No maintenance round: the new logind's arrival alone is asked.
        logind.stop()
        try logind.start()
        try waitUntil("the resume after logind's restart", timeout: 10) { seen.wakes.withLock { $0 } == 1 }
        try waitUntil("the new logind's delay lock", timeout: 10) { try logind.holdsSleepDelay() }
        XCTAssertFalse(watch.isAsleep)
    }

    /// dbus restarted under the watch: the bus lost, then a new logind on the new bus. The
    /// shared connection is made again and the lock taken from the new logind; its signal
    /// is followed on the new connection.
    func testTheBusRestartedTheLockIsTakenFromTheNewLogindAndItsSignalFollowed() throws {
        let bus = try DBusRig(.system)
        var logind = try DBusMockRig.logind(on: bus)
        let seen = Seen()
        let link = DBusLink(.address(bus.address), reconnect: Backoff(base: 0.2, cap: 1))
        let watch = SleepWatch(service: DBusService(SleepWatch.logind, on: link), clocks: VirtualScheduler(),
                               logger: Logger(label: "test")) {
            seen.sleeps.withLock { $0 += 1 }
        } onWake: {
            seen.wakes.withLock { $0 += 1 }
        }
        watch.start()
        defer { watch.stop() }
        try waitUntil("the delay lock", timeout: 10) { try logind.holdsSleepDelay() }

        try bus.restartDaemon()
        logind = try DBusMockRig.logind(on: bus)
        try waitUntil("the delay lock from the new logind", timeout: 10) { try logind.holdsSleepDelay() }
        try logind.prepareForSleep(true)
        try waitUntil("the lock released for sleep", timeout: 10) { try !logind.holdsSleepDelay() }
        XCTAssertEqual(seen.sleeps.withLock { $0 }, 1)
        try logind.prepareForSleep(false)
        try waitUntil("awake with the lock", timeout: 10) { try logind.holdsSleepDelay() && seen.wakes.withLock { $0 } == 1 }
    }

}
