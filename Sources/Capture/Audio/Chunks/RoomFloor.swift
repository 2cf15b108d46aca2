import Foundation

/// The room's own noise, learnt from the levels of the last `windowFrames` 20 ms frames:
/// the floor is a low percentile of them (`floorPercentile`), and the spread how far the
/// median stands above it (how much the noise's level moves from frame to frame). Speech
/// has pauses, so the low percentile stays on the room while someone talks; a room that
/// gets louder for good (a fan switched on) moves it within the window.
///
/// The levels are kept as a histogram of 0.5 dB bins with a ring of the window's bins, so
/// adding a frame and reading a percentile cost the same whatever the window.
/// docs/streams/microphone.md, "Adaptive bit rate".
public struct RoomFloor: Sendable, Equatable {
    /// 30 s of frames: long enough that speech cannot fill it without a pause, short
    /// enough to follow a room that changes.
    public static let defaultWindowFrames = 1_500
    /// The frames the floor needs before it is believed (1 s): before, there is no floor.
    public static let minimumFrames = 50
    public static let floorPercentile = 0.10

    private static let binWidth = 0.5
    private static let binCount = Int(-AudioLevel.floor / binWidth) + 1

    public let windowFrames: Int
    private var counts: [Int32]
    private var ring: [UInt16]
    private var next = 0
    private var filled = 0

    public init(windowFrames: Int = RoomFloor.defaultWindowFrames) {
        self.windowFrames = max(1, windowFrames)
        counts = [Int32](repeating: 0, count: Self.binCount)
        ring = [UInt16](repeating: 0, count: self.windowFrames)
    }

    public mutating func add(_ levels: [Double]) {
        for level in levels {
            let bin = Self.bin(of: level)
            if filled == windowFrames {
                counts[Int(ring[next])] -= 1
            } else {
                filled += 1
            }
            ring[next] = UInt16(bin)
            counts[bin] += 1
            next = (next + 1) % windowFrames
        }
    }

    /// The room's floor in dBFS; nil until `minimumFrames` have been seen.
    public var floor: Double? { percentile(Self.floorPercentile) }

    /// How far the median frame stands above the floor, in dB; nil with no floor.
    public var spread: Double? {
        guard let floor, let median = percentile(0.5) else { return nil }
        return median - floor
    }

    /// The level below which `fraction` of the window's frames lie (to the bin's width).
    func percentile(_ fraction: Double) -> Double? {
        guard filled >= Self.minimumFrames else { return nil }
        let wanted = Int32((Double(filled) * fraction).rounded(.up))
        var seen: Int32 = 0
        for (bin, count) in counts.enumerated() {
            seen += count
            if seen >= max(1, wanted) { return AudioLevel.floor + Double(bin) * Self.binWidth }
        }
        return nil
    }

    private static func bin(of level: Double) -> Int {
        guard level.isFinite else { return 0 }
        let index = Int(((level - AudioLevel.floor) / binWidth).rounded(.down))
        return min(binCount - 1, max(0, index))
    }
}
