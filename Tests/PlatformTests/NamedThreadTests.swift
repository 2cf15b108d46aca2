@testable import Platform
import Foundation
import Synchronization
import TestRigs
import XCTest

/// The thread helper every stream uses, with real threads, a real pipe and real signals.
final class NamedThreadTests: XCTestCase {
    /// The names of this process's threads as the kernel shows them (`top -H`).
    private func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .newlines)
        }
    }

    func testTheKernelShowsTheThreadByItsNameCutTo15Bytes() throws {
        let thread = try NamedThread(name: "ariata-namedtest-long") { waker in
            _ = waker.wait(for: nil, timeout: 30)
        }
        XCTAssertEqual(thread.name, "ariata-namedtes")
        try waitUntil("the name in /proc/self/task/*/comm", timeout: 5) { self.threadNames().contains("ariata-namedtes") }
        XCTAssertTrue(thread.stop(timeout: 5))
    }

    func testNamesAreCutOnWholeCharacters() {
        XCTAssertEqual(NamedThread.kernelName("ariata-location"), "ariata-location")
        XCTAssertEqual(NamedThread.kernelName("ariata-health-12"), "ariata-health-1")
        XCTAssertEqual(NamedThread.kernelName("ariata-ééééééé"), "ariata-éééé", "no half of a two-byte character")
    }

    func testStopWakesTheWorkAndJoinsTheThread() throws {
        let returned = Atomic<Bool>(false)
        let thread = try NamedThread(name: "ariata-stoptest") { waker in
            // A wait far longer than the test: only the stop can end it.
            while waker.wait(for: nil, timeout: 600) != .woken {}
            returned.store(true, ordering: .sequentiallyConsistent)
        }
        try waitUntil("the thread to run", timeout: 5) { self.threadNames().contains("ariata-stoptest") }
        let started = Monotonic.now
        XCTAssertTrue(thread.stop())
        XCTAssertLessThan(Monotonic.now - started, 2)
        XCTAssertTrue(returned.load(ordering: .sequentiallyConsistent), "stop() returns after the work")
        XCTAssertFalse(threadNames().contains("ariata-stoptest"), "joined: the thread is gone")
        XCTAssertTrue(thread.stop(), "a second stop finds it stopped")
    }

    func testAStopWithATimeLimitLeavesHungWorkToEndByItself() throws {
        let thread = try NamedThread(name: "ariata-hungtest") { _ in
            // Work that does not look at its waker (a connect nothing interrupts).
            usleep(1_500_000)
        }
        let started = Monotonic.now
        XCTAssertFalse(thread.stop(timeout: 0.2))
        XCTAssertLessThan(Monotonic.now - started, 1)
        try waitUntil("the thread to end by itself", timeout: 10) { !self.threadNames().contains("ariata-hungtest") }
        XCTAssertTrue(thread.join(timeout: 1), "it did end")
    }

    func testRunWaitsForTheWorkOnANamedThread() async throws {
        let seen = Mutex<String?>(nil)
        await NamedThread.run(name: "ariata-runtest") {
            let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
            seen.withLock { $0 = comm?.trimmingCharacters(in: .newlines) }
        }
        XCTAssertEqual(seen.withLock { $0 }, "ariata-runtest")
    }

    /// A signal that lands on a thread sleeping in poll(2) makes poll return EINTR; the
    /// wait must go on for the rest of its time, not end early or report a failure.
    func testPollAndWakerWaitOutTheirTimeThroughSignals() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in signalsCaught.add(1, ordering: .relaxed) }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0 // no SA_RESTART (poll is never restarted anyway)
        var previous = sigaction()
        XCTAssertEqual(sigaction(SIGUSR2, &action, &previous), 0)
        defer { sigaction(SIGUSR2, &previous, nil) }

        var pipeEnds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&pipeEnds), 0)
        defer { pipeEnds.forEach { close($0) } }
        let readEnd = pipeEnds[0]

        struct Outcome: Sendable {
            var poll: [Int16]?
            var pollSeconds: Double
            var waker: Waker.Outcome
            var wakerSeconds: Double
        }
        let target = Mutex<pthread_t?>(nil)
        let outcome = Mutex<Outcome?>(nil)
        let thread = try NamedThread(name: "ariata-eintr") { waker in
            target.withLock { $0 = pthread_self() }
            var start = Monotonic.now
            let revents = Poll.wait([readEnd], timeout: 1)
            let pollSeconds = Monotonic.now - start
            start = Monotonic.now
            let woke = waker.wait(for: readEnd, timeout: 1)
            outcome.withLock { $0 = Outcome(poll: revents, pollSeconds: pollSeconds, waker: woke, wakerSeconds: Monotonic.now - start) }
        }
        try waitUntil("the thread to start", timeout: 5) { target.withLock { $0 } != nil }
        let victim = try XCTUnwrap(target.withLock { $0 })
        let before = signalsCaught.load(ordering: .relaxed)
        while outcome.withLock({ $0 }) == nil {
            pthread_kill(victim, SIGUSR2)
            usleep(50_000)
        }
        XCTAssertTrue(thread.join(timeout: 5))
        let result = try XCTUnwrap(outcome.withLock { $0 })
        XCTAssertGreaterThan(signalsCaught.load(ordering: .relaxed) - before, 10, "the signals did land")
        XCTAssertEqual(result.poll, [0], "timed out, not failed")
        XCTAssertGreaterThanOrEqual(result.pollSeconds, 0.99)
        XCTAssertLessThan(result.pollSeconds, 1.5)
        XCTAssertEqual(result.waker, .timedOut)
        XCTAssertGreaterThanOrEqual(result.wakerSeconds, 0.99)
    }
}

private let signalsCaught = Atomic<Int>(0)
