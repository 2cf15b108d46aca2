import AgentCore
import Foundation
import Platform

/// The Bluetooth LE source's watch while its sensor is away: a `BlueZDeviceWatch` that
/// follows BlueZ's signs of the sensor. With BlueZ's advertisement monitor that is all;
/// without it (or once BlueZ let it go), a filtered discovery of `scanSeconds` every
/// `awayScanEvery` (a low duty: the controller is not kept scanning while a strap lies in
/// a drawer). Lives on the source's thread only.
struct AwayWatch {
    let tuning: BLETuning
    private var watch: BlueZDeviceWatch?
    /// Monotonic seconds of the next discovery's start, or of the running one's end; nil
    /// while a monitor watches.
    private(set) var nextChange: TimeInterval?
    private var scanning = false
    /// BlueZ not reachable (bluetoothd restarting, not running): the watch is tried again
    /// after the source's own backoff, not only at the next attempt.
    private var beginFailures = RetryCounter()
    private var beginAgainAt: TimeInterval = 0

    init(tuning: BLETuning) {
        self.tuning = tuning
    }

    /// How the away sensor is watched now (nil while not watching).
    var watchedBy: SensorStatus.AwayWatch? {
        guard let watch else { return nil }
        return watch.isMonitoring ? .advertisementMonitor : .discovery
    }

    /// Why no advertisement monitor watches (nil while one does, or while not watching).
    var monitorUnavailable: String? { watch?.monitorUnavailable?.description }

    /// Starts watching, unless it already does (BlueZ not reachable: tried again after a
    /// backoff, `nextChange`). `onMonitorGone` wakes the source so that discoveries take
    /// over, or a new watch is made when bluetoothd restarted.
    mutating func begin(target: BLESensorTarget, onSeen: @escaping @Sendable (String) -> Void,
                        onMonitorGone: @escaping @Sendable () -> Void = {}) {
        if watch?.isStale == true { end() }
        let now = Monotonic.now
        guard watch == nil, now >= beginAgainAt else { return }
        watch = try? BlueZDeviceWatch(target: target, bus: tuning.bus, onSeen: onSeen, onMonitorGone: onMonitorGone)
        scanning = false
        if let watch {
            beginFailures.succeeded()
            nextChange = watch.isMonitoring ? nil : now + tuning.awayScanEvery
        } else {
            // The reconnect steps' base and cap, doubling: bluetoothd back after a restart
            // is watched again within seconds.
            beginAgainAt = now + beginFailures.failed(backoff: Backoff(base: tuning.reconnect.base, cap: tuning.reconnect.cap))
            nextChange = beginAgainAt
        }
    }

    /// Starts or ends the discovery when its time has come.
    mutating func tick(at now: TimeInterval) {
        guard let watch else { return }
        if watch.isMonitoring {
            nextChange = nil
            return
        }
        // BlueZ let the monitor go: discoveries from now.
        guard let due = nextChange else {
            nextChange = now
            return tick(at: now)
        }
        guard now >= due else { return }
        if scanning {
            watch.endDiscovery()
            nextChange = now + tuning.awayScanEvery
        } else {
            watch.discover()
            nextChange = now + tuning.scanSeconds
        }
        scanning.toggle()
    }

    mutating func end() {
        watch?.close()
        watch = nil
        nextChange = nil
        scanning = false
    }
}

/// A connected sensor that sends nothing: after `limit` without a notification it is
/// reported once (a stale GATT cache after a firmware update is the usual cause), and
/// healthy again at its next notification. Lives on the source's thread only.
struct SilenceWatch {
    let limit: TimeInterval
    private var lastHeard: TimeInterval?
    private(set) var isReported = false

    init(limit: TimeInterval) {
        self.limit = limit
    }

    mutating func connected(at now: TimeInterval) {
        lastHeard = now
        isReported = false
    }

    /// A notification came; true when the sensor had been reported silent.
    mutating func heard(at now: TimeInterval) -> Bool {
        defer {
            lastHeard = now
            isReported = false
        }
        return isReported
    }

    /// When the sensor is to be reported silent (nil once it is, or before a connection).
    var deadline: TimeInterval? { isReported ? nil : lastHeard.map { $0 + limit } }

    func isOverdue(at now: TimeInterval) -> Bool { deadline.map { now >= $0 } ?? false }

    mutating func reported() { isReported = true }
}
