import Foundation
import Platform

/// When a notification arrived, on the three clocks a sample needs: the monotonic one
/// closes windows, the wall clock dates the sample, the boot clock corrects it later when
/// the wall clock could not be believed (docs/time.md).
struct BeatReceipt: Sendable, Equatable {
    var monotonic: TimeInterval
    var wall: Date
    var boot: BootInstant?
    /// Whether the wall clock could be believed then: a sample dated by an unbelieved one
    /// is held until corrected.
    var clockTrusted = true

    static func now(wall: Date, clockTrusted: Bool) -> BeatReceipt {
        BeatReceipt(monotonic: Monotonic.now, wall: wall, boot: BootClock.now(), clockTrusted: clockTrusted)
    }
}

/// What a closed window gives.
enum BeatWindowResult: Sendable, Equatable {
    /// The mean of the heart rates notified in the window, whole bpm.
    case heartRate(bpm: Int, readings: Int, start: BeatReceipt, seconds: Double)
    case hrv(HRVStatistics, start: BeatReceipt, seconds: Double)
    /// A variability window without enough clean beats: nothing is sent, it is counted.
    case hrvInsufficient(HRVStatistics.Insufficient, start: BeatReceipt)
}

/// Turns a sensor's notifications into the samples the server takes: one heart rate per
/// `heartRateSeconds`, one variability figure per `hrvSeconds`. Windows lie on a grid of
/// the monotonic clock (one every `seconds`, like a clock's :00, :05, …, so samples do not
/// drift against the sensor's own rhythm); a window opens with the first notification in
/// it that has skin contact (or cannot tell) and closes at the grid's next line;
/// notifications reporting no contact, or a heart rate of 0, are left out of both
/// windows, and the RR interval after them does not follow the one before. A window cut
/// short (`closeAll`, at a stop) is judged by the same rules against its full length
/// (docs/streams/health.md#bluetooth-le-sensors).
struct BeatWindows {
    let heartRateSeconds: Double
    let hrvSeconds: Double
    let rule: HRVStatistics.Rule

    private var heartRate: (start: BeatReceipt, sum: Int, count: Int)?
    private var hrv: (start: BeatReceipt, intervals: [RRInterval])?
    /// The next RR interval follows the last one taken.
    private var continuous = false

    init(heartRateSeconds: Double, hrvSeconds: Double, rule: HRVStatistics.Rule = .init()) {
        self.heartRateSeconds = heartRateSeconds
        self.hrvSeconds = hrvSeconds
        self.rule = rule
    }

    /// Monotonic time at which the next window closes; nil while none is open.
    var deadline: TimeInterval? {
        [heartRate.map { Self.end(of: $0.start, seconds: heartRateSeconds) }, hrv.map { Self.end(of: $0.start, seconds: hrvSeconds) }]
            .compactMap { $0 }.min()
    }

    /// The grid line after `start`: where its window closes.
    static func end(of start: BeatReceipt, seconds: Double) -> TimeInterval {
        ((start.monotonic / seconds).rounded(.down) + 1) * seconds
    }

    var isEmpty: Bool { heartRate == nil && hrv == nil }

    /// Takes one notification; returns the windows it found closed before it.
    mutating func add(_ measurement: HeartRateMeasurement, at receipt: BeatReceipt) -> [BeatWindowResult] {
        let closed = close(at: receipt.monotonic)
        guard measurement.contact != .notDetected, measurement.heartRate > 0 else {
            continuous = false
            return closed
        }
        if var window = heartRate {
            window.sum += measurement.heartRate
            window.count += 1
            heartRate = window
        } else {
            heartRate = (receipt, measurement.heartRate, 1)
        }
        let milliseconds = measurement.rrMilliseconds
        if !milliseconds.isEmpty {
            var window = hrv ?? (receipt, [])
            for (index, value) in milliseconds.enumerated() {
                window.intervals.append(RRInterval(milliseconds: value, followsPrevious: index > 0 || continuous))
            }
            hrv = window
            continuous = true
        }
        return closed
    }

    /// The connection was lost: the next interval does not follow the last one.
    mutating func gap() { continuous = false }

    /// The windows whose time is up at `now` (monotonic).
    mutating func close(at now: TimeInterval) -> [BeatWindowResult] {
        var out: [BeatWindowResult] = []
        if let window = heartRate, now >= Self.end(of: window.start, seconds: heartRateSeconds) {
            out.append(closeHeartRate(window))
            heartRate = nil
        }
        if let window = hrv, now >= Self.end(of: window.start, seconds: hrvSeconds) {
            out.append(closeHRV(window))
            hrv = nil
        }
        return out
    }

    /// Closes every open window now (the source stops): a heart-rate window with any
    /// reading is sent; a variability window only when its clean beats cover half of a
    /// whole window, as any other.
    mutating func closeAll() -> [BeatWindowResult] {
        var out: [BeatWindowResult] = []
        if let window = heartRate { out.append(closeHeartRate(window)) }
        if let window = hrv { out.append(closeHRV(window)) }
        heartRate = nil
        hrv = nil
        continuous = false
        return out
    }

    private func closeHeartRate(_ window: (start: BeatReceipt, sum: Int, count: Int)) -> BeatWindowResult {
        let mean = (Double(window.sum) / Double(window.count)).rounded()
        return .heartRate(bpm: Int(mean), readings: window.count, start: window.start, seconds: heartRateSeconds)
    }

    private func closeHRV(_ window: (start: BeatReceipt, intervals: [RRInterval])) -> BeatWindowResult {
        switch HRVStatistics.compute(window.intervals, windowSeconds: hrvSeconds, rule: rule) {
        case .success(let statistics): return .hrv(statistics, start: window.start, seconds: hrvSeconds)
        case .failure(let why): return .hrvInsufficient(why, start: window.start)
        }
    }
}
