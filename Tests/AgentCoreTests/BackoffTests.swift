import AgentCore
import Foundation
import XCTest

/// The one backoff every retry in the agent uses, with the numbers each user gives it.
final class BackoffTests: XCTestCase {
    func testDoublesFromTheBaseUpToTheCap() {
        let gpsd = Backoff(base: 0.5, cap: 10)
        XCTAssertEqual((1...8).map { gpsd.delay(afterFailures: $0) }, [0.5, 1, 2, 4, 8, 10, 10, 10])
        XCTAssertEqual(gpsd.delay(afterFailures: 0), 0.5, "no failure yet counts as the first")
        XCTAssertEqual(gpsd.delay(afterFailures: 10_000), 10, "no overflow however long the outage")
        let tokenPause = Backoff(base: 300, cap: 3_600)
        XCTAssertEqual((1...6).map { tokenPause.delay(afterFailures: $0) }, [300, 600, 1_200, 2_400, 3_600, 3_600])
    }

    func testJitterOnlyShortensSoTheCapHolds() {
        let outage = Backoff(base: 30, cap: 300, jitter: 0.2)
        XCTAssertEqual((1...6).map { outage.delay(afterFailures: $0) }, [30, 60, 120, 240, 300, 300])
        XCTAssertEqual(outage.delay(afterFailures: 5, random: 0.999_999), 240, accuracy: 0.001)
        for _ in 0..<200 {
            let delay = outage.delay(afterFailures: 7, random: Double.random(in: 0..<1))
            XCTAssertTrue(delay > 240 - 0.001 && delay <= 300, "\(delay)")
        }
    }

    func testAConstantWaitAndNonsenseParameters() {
        XCTAssertEqual((1...3).map { Backoff.constant(5).delay(afterFailures: $0) }, [5, 5, 5])
        let odd = Backoff(base: 10, cap: 1, factor: 0.5, jitter: 3)
        XCTAssertEqual(odd.cap, 10, "a cap below the base is the base")
        XCTAssertEqual(odd.factor, 1, "a delay never shrinks")
        XCTAssertEqual(odd.delay(afterFailures: 2, random: 0.5), 5, "jitter is at most the whole delay")
    }

    /// The counter every retry keeps: each failure earns the next step, a success starts
    /// again from the first, a server's own wait wins, and it is stored as a bare count.
    func testTheRetryCounterStepsThroughTheBackoffAndStartsAgainOnSuccess() throws {
        let backoff = Backoff(base: 1, cap: 8)
        var counter = RetryCounter()
        XCTAssertFalse(counter.isFailing)
        XCTAssertEqual((1...5).map { _ in counter.failed(backoff: backoff) }, [1, 2, 4, 8, 8])
        XCTAssertEqual(counter.failures, 5)
        XCTAssertTrue(counter.isFailing)
        counter.succeeded()
        XCTAssertEqual(counter.failures, 0)
        XCTAssertEqual(counter.failed(backoff: backoff), 1, "after a success the first step again")
        XCTAssertEqual(counter.failed(backoff: backoff, retryAfter: 30), 30, "the server's Retry-After wins")
        XCTAssertEqual(counter.failures, 2, "a Retry-After still counts as a failure")
        counter.failed()
        XCTAssertEqual(counter.failures, 3)

        struct Kept: Codable, Equatable { var failures: RetryCounter }
        let json = try JSONEncoder().encode(Kept(failures: counter))
        XCTAssertEqual(String(decoding: json, as: UTF8.self), #"{"failures":3}"#, "stored as the count it always was")
        XCTAssertEqual(try JSONDecoder().decode(Kept.self, from: Data(#"{"failures":-4}"#.utf8)).failures.failures, 0,
                       "a negative count read back is no failure")
    }
}
