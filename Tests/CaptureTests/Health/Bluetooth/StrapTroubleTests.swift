import AgentCore
@testable import Capture
import DBus
import Foundation
import Platform
import Synchronization
import TestRigs
import XCTest

/// Straps as they behave, against python-dbusmock's bluez5 on a private system bus, in a
/// stream that also reads a file: one source's trouble stays its own, a strap found again
/// under a new address, the backoff while it is away and its quick return, a connection
/// that stays silent (docs/streams/health.md#bluetooth-le-sensors).
final class StrapTroubleTests: XCTestCase {
    static let strap = "strap"

    /// A stream of a file source (`test-source`, at `path`) and a strap source.
    func stream(_ bed: HealthTestBed, bus: DBusRig, path: String, strap: BLESourceSettings,
                tune: (inout BLETuning) -> Void = { _ in }) -> HealthStream {
        try? FileManager.default.append("", to: path)
        var config = HealthConfig()
        config.enabled = true
        config.commitInterval = 1
        config.bleHeartRateSeconds = 1
        config.hrvWindowSeconds = 3
        config.sources = [HealthTestBed.lineSource(.file, path: path), .ble(strap)]
        var tuning = BLETuning()
        tuning.bus = .address(bus.address)
        tuning.commitDelay = 0.2
        tuning.scanSeconds = 0.5
        tuning.connectTimeout = 3
        tuning.reconnect = Backoff(base: 0.2, cap: 1)
        tune(&tuning)
        return HealthStream(config: config, queue: bed.database.recordQueue,
                            clockTrust: ClockTrust(sync: KernelClockSync(), trustSystemClock: true), bleTuning: tuning,
                            agentState: bed.database.agentState, logger: HealthTestBed.logger)
    }

    /// The file keeps its pace: `count` more lines appended now are all written.
    func fileKeepsItsPace(_ bed: HealthTestBed, path: String, written: inout Int, count: Int = 5) throws {
        try FileManager.default.append(SampleLines.jsonl(written..<written + count), to: path)
        written += count
        let expected = written
        try waitUntil("the file's \(expected) samples written") { try bed.count() >= expected }
    }

    func testAFailingStrapIsLeftToItselfAndTheFileInItsStreamKeepsItsPace() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let bluez = try BlueZMockRig(on: bus, knownToBlueZ: false)
        defer { bluez.stop() }
        let path = bed.file("steps.jsonl")
        let stream = stream(bed, bus: bus, path: path, strap: BLESourceSettings(address: "A0:9E:1A:12:34:56", name: Self.strap))
        stream.start()
        defer { stream.stop() }
        var written = 0
        // As the supervisor would at every round after the second unhealthy one.
        for _ in 0..<4 {
            try fileKeepsItsPace(bed, path: path, written: &written)
            let liveness = stream.liveness()
            XCTAssertTrue(liveness.reason?.hasPrefix("\(Self.strap): heart-rate sensor") == true, "\(liveness)")
            XCTAssertFalse(liveness.reason?.contains("test-source") == true, "\(liveness)")
            let said = try XCTUnwrap(stream.restartFaults(), "the stream restarts its own parts")
            XCTAssertTrue(said.contains("left \(Self.strap) retrying by itself"), said)
            XCTAssertTrue(stream.capturesInPart(), "the file still reads: the coverage ledger says captured")
        }
        stream.stop()
        XCTAssertEqual(try bed.values(), (0..<written).map(Double.init), "every line once, in order")
        XCTAssertEqual(stream.statuses().first?.liveness, .healthy)
    }

    /// A source whose reading stopped is started again alone, after its own wait.
    func testASourceWhoseReadingStoppedIsStartedAgainAloneAfterItsWait() throws {
        final class GivesUpOnce: HealthSource, @unchecked Sendable {
            let name = "flaky"
            let runs = Mutex(0)
            func run(until stop: Waker) {
                let run = runs.withLock { $0 += 1; return $0 }
                if run == 1 { return }
                _ = stop.wait(for: nil, timeout: 30)
            }
            func status() -> HealthSourceStatus {
                var status = HealthSourceStatus(name: name, kind: .file)
                status.liveness = .healthy
                return status
            }
        }
        let source = GivesUpOnce()
        let now = Mutex<TimeInterval>(100)
        let runner = HealthSourceRunner(source: source, threadName: "ariata-test-1", clock: { now.withLock { $0 } },
                                        logger: HealthTestBed.logger)
        XCTAssertTrue(runner.start())
        defer { runner.stop() }
        try waitUntil("its reading stopped") { runner.ended != nil }
        XCTAssertEqual(runner.liveness().reason, "its reading stopped")
        XCTAssertNil(runner.restartIfEnded(), "not before its wait")
        now.withLock { $0 += HealthSourceTuning.restartAlone.base }
        XCTAssertEqual(runner.restartIfEnded(), "started flaky again")
        try waitUntil("its second run") { source.runs.withLock { $0 } == 2 }
        XCTAssertTrue(runner.liveness().isHealthy)
        XCTAssertNil(runner.restartIfEnded(), "a running source is not restarted")
        XCTAssertEqual(runner.restarts, 1)
    }

    /// The strap's object goes and the same name appears under another address when a
    /// discovery runs: found again by its name, adopted (kept in the agent's state, shown in its status), while
    /// the file in the same stream keeps its pace; the config keeps what was written.
    func testAStrapFoundAgainUnderANewAddressIsAdopted() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus)
        let configured = sensor.sensorAddress
        let path = bed.file("steps.jsonl")
        let settings = BLESourceSettings(address: configured, name: sensor.sensorName)
        let stream = stream(bed, bus: bus, path: path, strap: settings)
        stream.start()
        defer { stream.stop() }
        try waitUntil("notifications on") { try sensor.isNotifying() }
        var written = 0
        try fileKeepsItsPace(bed, path: path, written: &written)

        let moved = "C4:7F:51:0A:1B:2C"
        let start = Date()
        let discoveries = try sensor.adapterCalls(of: "StartDiscovery").count
        // BlueZ adds the strap under its new address when a discovery hears it: the
        // source looks for it by name once the address is gone.
        try sensor.moveSensor(to: moved) {
            try waitUntil("a discovery after the address went", timeout: 30) {
                try sensor.adapterCalls(of: "StartDiscovery").count > discoveries
            }
            try fileKeepsItsPace(bed, path: path, written: &written)
        }
        try waitUntil("the strap found under its new address", timeout: 90) { try sensor.isNotifying() && stream.liveness().isHealthy }
        print(String(format: "measured: the strap found again under its new address %.2f s after it moved", Date().timeIntervalSince(start)))
        try fileKeepsItsPace(bed, path: path, written: &written)
        let ble = try XCTUnwrap(stream.statuses()[1].kindStatus(BLESourceStatus.self))
        XCTAssertEqual(ble.adoptedAddress, moved)
        XCTAssertEqual(ble.sensor(of: stream.statuses()[1])?.adoptedAddress, moved)
        XCTAssertEqual(ble.sensor(of: stream.statuses()[1])?.state, .connected)
        XCTAssertEqual(try bed.database.agentState.value(AgentStateKey.bleAdoptedAddress(source: sensor.sensorName)), moved)
        XCTAssertEqual(stream.config.sources.last, .ble(settings), "the config keeps what the person wrote")
        try sensor.notify(HeartRateMeasurement(heartRate: 64, contact: .detected).bytes())
        try waitUntil("a heart rate from the new address") {
            try bed.payloads().contains { $0["metric_type"] as? String == "heart_rate" }
        }
        stream.stop()

        // The next start looks for the adopted address first.
        let again = self.stream(bed, bus: bus, path: path, strap: settings)
        XCTAssertEqual(again.statuses()[1].kindStatus(BLESourceStatus.self)?.address, moved)
        again.start()
        defer { again.stop() }
        try waitUntil("notifications on after a restart") { try sensor.isNotifying() && again.liveness().isHealthy }
    }

    /// Away, the strap costs few connect attempts (the backoff grows towards minutes; here
    /// shortened fifty-fold), and once back it is taken when BlueZ hears it advertise
    /// during the watch's low-duty discovery, long before the next attempt was due.
    func testAStrapAwayBacksOffAndIsTakenWhenItAdvertises() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus)
        let path = bed.file("steps.jsonl")
        let stream = stream(bed, bus: bus, path: path, strap: BLESourceSettings(address: sensor.sensorAddress, name: Self.strap)) {
            $0.reconnect = Backoff(base: 0.1, cap: 30)
            $0.awayScanEvery = 0.5
            $0.scanSeconds = 0.5
        }
        stream.start()
        defer { stream.stop() }
        try waitUntil("notifications on") { try sensor.isNotifying() }
        let before = try sensor.connectCalls()
        try sensor.goAway()
        // Attempts 0.1, 0.2, 0.4, 0.8, 1.6, 3.2 s apart: the sixth ends at 6.3 s, the next
        // is due at 12.7 s.
        Thread.sleep(forTimeInterval: 7)
        let attempts = try sensor.connectCalls() - before
        XCTAssertLessThanOrEqual(attempts, 7, "attempts while away")
        XCTAssertGreaterThanOrEqual(attempts, 3, "it keeps trying")
        XCTAssertFalse(try sensor.adapterCalls(of: "StartDiscovery").isEmpty, "the away watch's discovery runs")
        try sensor.comeBack()
        let back = Date()
        try waitUntil("the strap taken up once it advertises", timeout: 10) {
            try sensor.advertise()
            return try sensor.isNotifying() && stream.liveness().isHealthy
        }
        let seconds = Date().timeIntervalSince(back)
        print(String(format: "measured: the strap taken up %.2f s after it advertised again", seconds))
        XCTAssertLessThan(seconds, 5, "taken by its advertisement, not by the next attempt")
        XCTAssertFalse(try sensor.isDiscovering(), "no discovery left running once connected")
        let status = stream.statuses()[1]
        XCTAssertEqual(status.kindStatus(BLESourceStatus.self)?.sensor(of: status)?.awayWatch, .discovery,
                       "bluetoothd without its experimental interfaces: no monitor, the low-duty discovery")
    }

    /// An unbonded strap away, with bluetoothd offering its advertisement monitor: no
    /// discovery at all while it is away (the discovery's interval is an hour here, so only
    /// the monitor can explain its return), and once it advertises again BlueZ's
    /// `DeviceFound` has it connected and notifying before the backoff's next attempt.
    func testAnUnbondedStrapIsFoundByBlueZsAdvertisementMonitorWithoutADiscovery() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus, advertisementMonitor: true)
        let backoff = Backoff(base: 0.25, cap: 3_600, factor: 80)
        let stream = stream(bed, bus: bus, path: bed.file("steps.jsonl"),
                            strap: BLESourceSettings(address: sensor.sensorAddress, name: Self.strap)) {
            $0.reconnect = backoff
            $0.awayScanEvery = 3_600
        }
        stream.start()
        defer { stream.stop() }
        try waitUntil("notifications on") { try sensor.isNotifying() }
        XCTAssertFalse(try sensor.isPaired(sensor.sensorAddress), "unbonded: the kernel does not reconnect it by itself")
        let discoveries = try sensor.adapterCalls(of: "StartDiscovery").count
        let before = try sensor.connectCalls()
        try sensor.goAway()
        try waitUntil("the monitor registered") { try sensor.monitors().registered == 1 }
        // The first attempt fails 0.25 s after the link dropped; the next is due 20 s after it,
        // beyond the 10 s the strap has to be back in.
        try waitUntil("an attempt while away") { try sensor.connectCalls() - before >= 1 }
        let status = stream.statuses()[1]
        XCTAssertEqual(status.kindStatus(BLESourceStatus.self)?.sensor(of: status)?.awayWatch, .advertisementMonitor)
        let attempts = try sensor.connectCalls()
        try sensor.comeBack()
        try sensor.advertise()
        let advertised = Date()
        try waitUntil("connected and notifying", timeout: 10) { try sensor.isNotifying() && stream.liveness().isHealthy }
        let seconds = Date().timeIntervalSince(advertised)
        print(String(format: "measured: an unbonded strap connected and notifying %.2f s after it advertised (advertisement monitor)", seconds))
        XCTAssertEqual(try sensor.monitors().deviceFoundCalls, 1, "BlueZ told the monitor")
        XCTAssertEqual(try sensor.connectCalls(), attempts + 1, "one attempt: the one the monitor's DeviceFound made")
        XCTAssertLessThan(seconds, backoff.delay(afterFailures: 2), "before the backoff's next attempt was due")
        XCTAssertEqual(try sensor.adapterCalls(of: "StartDiscovery").count, discoveries, "no discovery while it was away")
        try waitUntil("the monitor unregistered once connected") { try sensor.monitors().registered == 0 }
    }

    /// A strap BlueZ forgot (an unbonded device unheard for a while loses its object): with
    /// the monitor, an attempt runs no discovery of its own, and the strap's advertisement
    /// makes its object and brings it back.
    func testAForgottenStrapComesBackByTheMonitorWithoutADiscovery() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus, advertisementMonitor: true)
        let stream = stream(bed, bus: bus, path: bed.file("steps.jsonl"),
                            strap: BLESourceSettings(address: sensor.sensorAddress, name: Self.strap)) {
            $0.awayScanEvery = 3_600
        }
        stream.start()
        defer { stream.stop() }
        try waitUntil("notifications on") { try sensor.isNotifying() }
        let discoveries = try sensor.adapterCalls(of: "StartDiscovery").count
        try sensor.goAway()
        try sensor.removeSensor()
        try waitUntil("the monitor registered") { try sensor.monitors().registered == 1 }
        try waitUntil("away") { !stream.liveness().isHealthy }
        // Attempts every second at most (the test's backoff) find nothing.
        Thread.sleep(forTimeInterval: 1.5)
        XCTAssertEqual(try sensor.adapterCalls(of: "StartDiscovery").count, discoveries, "no discovery for an attempt")
        try sensor.advertise()
        XCTAssertTrue(try sensor.knows(sensor.sensorAddress), "BlueZ made its object when the monitor heard it")
        try waitUntil("connected and notifying", timeout: 10) { try sensor.isNotifying() && stream.liveness().isHealthy }
        XCTAssertEqual(try sensor.adapterCalls(of: "StartDiscovery").count, discoveries, "no discovery at all")
    }

    /// bluetoothd restarting while the strap is away: the new one knows neither the monitor
    /// nor the unbonded strap. The watch registers its monitor with it again, and the
    /// strap's advertisement brings it back, long before the backoff's next attempt.
    func testTheMonitorIsRegisteredAgainWhenBluetoothdRestarts() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus, knownToBlueZ: false, advertisementMonitor: true)
        try sensor.addSensor()
        let stream = stream(bed, bus: bus, path: bed.file("steps.jsonl"),
                            strap: BLESourceSettings(address: sensor.sensorAddress, name: Self.strap)) {
            $0.reconnect = Backoff(base: 0.25, cap: 3_600, factor: 80)
            $0.awayScanEvery = 3_600
        }
        stream.start()
        defer { stream.stop() }
        try waitUntil("notifications on") { try sensor.isNotifying() }
        try sensor.goAway()
        try waitUntil("the monitor registered") { try sensor.monitors().registered == 1 }
        try sensor.restart()
        XCTAssertFalse(try sensor.knows(sensor.sensorAddress), "the new bluetoothd forgot the unbonded strap")
        try waitUntil("the monitor registered with the new bluetoothd") { try sensor.monitors().registered == 1 }
        try sensor.advertise()
        try waitUntil("connected and notifying", timeout: 10) { try sensor.isNotifying() && stream.liveness().isHealthy }
        XCTAssertEqual(try sensor.monitors().deviceFoundCalls, 1)
        XCTAssertTrue(try sensor.adapterCalls(of: "StartDiscovery").isEmpty, "no discovery at all")
    }

    /// What a strap away for an hour costs, on a clock sped up 600-fold (an hour in 6 s,
    /// every interval of `BLETuning` divided alike): connect attempts, and discovery
    /// seconds with the advertisement monitor and without (docs/performance.md).
    func testAnHourAwayCostsFewAttemptsAndNoDiscoveryWithTheMonitor() throws {
        let speedUp = 600.0
        let hour = 3_600 / speedUp
        for monitor in [true, false] {
            let bed = try HealthTestBed()
            let bus = try DBusRig(.system)
            let sensor = try BlueZMockRig(on: bus, advertisementMonitor: monitor)
            let defaults = BLETuning()
            let stream = stream(bed, bus: bus, path: bed.file("steps.jsonl"),
                                strap: BLESourceSettings(address: sensor.sensorAddress, name: Self.strap)) {
                $0.reconnect = Backoff(base: defaults.reconnect.base / speedUp, cap: defaults.reconnect.cap / speedUp)
                $0.awayScanEvery = defaults.awayScanEvery / speedUp
                $0.scanSeconds = defaults.scanSeconds / speedUp
            }
            stream.start()
            try waitUntil("notifications on") { try sensor.isNotifying() }
            let attempts = try sensor.connectCalls(), discoveries = try sensor.adapterCalls(of: "StartDiscovery").count
            try sensor.goAway()
            Thread.sleep(forTimeInterval: hour)
            let hourAttempts = try sensor.connectCalls() - attempts
            let discoverySeconds = Double(try sensor.adapterCalls(of: "StartDiscovery").count - discoveries) * defaults.scanSeconds
            stream.stop()
            sensor.stop()
            print("measured: a strap away an hour (\(monitor ? "advertisement monitor" : "no monitor")): \(hourAttempts) connect attempts, \(Int(discoverySeconds)) s of discovery")
            // 5 s doubling to 5 min: 16 in the first hour (12 an hour after that).
            XCTAssertLessThanOrEqual(hourAttempts, 18, "attempts back off to minutes")
            XCTAssertGreaterThanOrEqual(hourAttempts, 8, "it keeps trying")
            if monitor {
                XCTAssertEqual(discoverySeconds, 0, "the monitor needs no discovery")
            } else {
                XCTAssertGreaterThan(discoverySeconds, 0, "without a monitor the low-duty discovery runs")
            }
        }
    }

    /// Connected, and nothing comes: unhealthy with the fix, healthy again at the next
    /// notification.
    func testAConnectedStrapThatNeverNotifiesIsUnhealthyWithItsFix() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus)
        let stream = stream(bed, bus: bus, path: bed.file("steps.jsonl"),
                            strap: BLESourceSettings(address: sensor.sensorAddress, name: Self.strap)) { $0.silenceLimit = 1 }
        stream.start()
        defer { stream.stop() }
        try waitUntil("notifications on") { try sensor.isNotifying() }
        try waitUntil("the silence reported") { stream.liveness().reason?.contains("bluetoothctl remove \(sensor.sensorAddress)") == true }
        let status = stream.statuses()[1]
        XCTAssertEqual(status.kindStatus(BLESourceStatus.self)?.sensor(of: status)?.state, .silent)
        XCTAssertNil(status.kindStatus(BLESourceStatus.self)?.disconnectedSince, "connected, not away")
        XCTAssertTrue(try sensor.isConnected())
        try sensor.notify(HeartRateMeasurement(heartRate: 66, contact: .detected).bytes())
        try waitUntil("healthy again") { stream.liveness().isHealthy }
    }

    /// StartNotify refused until the strap is paired (BlueZ's NotPermitted): the source
    /// says to pair it, and is left retrying by itself.
    func testAStrapThatNeedsPairingSaysSo() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus, knownToBlueZ: false)
        try sensor.addSensor(address: sensor.sensorAddress, name: sensor.sensorName, requiresPairing: true)
        let stream = stream(bed, bus: bus, path: bed.file("steps.jsonl"),
                            strap: BLESourceSettings(address: sensor.sensorAddress, name: Self.strap))
        stream.start()
        defer { stream.stop() }
        try waitUntil("the refusal") { stream.liveness().reason?.contains("asks to be paired") == true }
        XCTAssertFalse(try sensor.isNotifying())
        XCTAssertTrue(stream.restartFaults()?.contains("left \(Self.strap) retrying by itself") == true)
    }

    /// `doctor`'s check says how the sensor will be found again once away: by BlueZ's
    /// advertisement monitor where bluetoothd offers it, else by the discovery, with the fix.
    func testTheCheckSaysHowAnAwaySensorIsFoundAgain() throws {
        for monitor in [true, false] {
            let bus = try DBusRig(.system)
            let sensor = try BlueZMockRig(on: bus, advertisementMonitor: monitor)
            try sensor.wear(sensor.sensorAddress)
            var probe = BLESensorProbe(target: BLESensorTarget(address: sensor.sensorAddress, name: nil), bus: .address(bus.address))
            probe.beatIntervalWindow = 0.5
            let check = BLESourceKind.check(probe.run(), name: "health ble \(sensor.sensorAddress)")
            XCTAssertEqual(check.outcome, .ok, check.detail)
            XCTAssertTrue(check.detail.hasSuffix(monitor ? "; when away, found again by BlueZ's advertisement monitor within seconds"
                                                 : "(BlueZ offers no advertisement monitor: Experimental = true in /etc/bluetooth/main.conf would)"),
                          check.detail)
            sensor.stop()
        }
    }

    /// `doctor`'s and onboard's check decides about beat intervals over its window, not
    /// from the first notification: below 60 bpm a notification may carry none. A sensor
    /// that sends none in the whole window (an optical one) is told apart.
    func testTheCheckDecidesAboutBeatIntervalsOverItsWindow() throws {
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus)
        var probe = BLESensorProbe(target: BLESensorTarget(address: sensor.sensorAddress, name: nil), bus: .address(bus.address))
        probe.beatIntervalWindow = 1.5
        for laterWithIntervals in [true, false] {
            let done = DispatchSemaphore(value: 0)
            let failure = Mutex<String?>(nil)
            DispatchQueue.global().async { [sensor] in
                defer { done.signal() }
                do {
                try waitUntil("notifications on") { try sensor.isNotifying() }
                // 52 bpm: no beat ended between these two notifications.
                try sensor.notify(HeartRateMeasurement(heartRate: 52, contact: .detected).bytes())
                Thread.sleep(forTimeInterval: 0.5)
                try sensor.notify(HeartRateMeasurement(heartRate: 52, contact: .detected,
                                                       rrIntervals: laterWithIntervals ? [1180] : []).bytes())
                } catch {
                    failure.withLock { $0 = "\(error)" }
                }
            }
            let reading = try probe.run().get()
            done.wait()
            XCTAssertNil(failure.withLock { $0 })
            XCTAssertEqual(reading.hasRRIntervals, laterWithIntervals)
            XCTAssertEqual(reading.notifications, 2)
            XCTAssertEqual(reading.address, sensor.sensorAddress)
            XCTAssertEqual(reading.addressType, .public)
            try waitUntil("let go") { try !sensor.isNotifying() }
        }
    }
}
