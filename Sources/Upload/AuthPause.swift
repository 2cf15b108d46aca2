import Foundation

/// The pause after the server refused the device token (401/403, error E002). Nothing
/// is dropped; uploads stop for 5 minutes, then 10, 20, 40, then an hour at most, and
/// try again by themselves (a server-side fix needs nothing on the device). A new token
/// (`Uploader.updateServer`) ends the pause at once.
public struct AuthPause: Sendable, Equatable {
    public var first: TimeInterval
    public var maximum: TimeInterval
    public private(set) var refusals = 0
    public private(set) var until: Date?

    public init(first: TimeInterval = 300, maximum: TimeInterval = 3_600) {
        self.first = first
        self.maximum = max(first, maximum)
    }

    public func isPaused(at now: Date) -> Bool {
        until.map { now < $0 } ?? false
    }

    /// The token was refused again: pause, twice as long as the last time.
    public mutating func refused(at now: Date) -> Date {
        refusals += 1
        let length = min(first * pow(2, Double(min(refusals - 1, 30))), maximum)
        let end = now.addingTimeInterval(length)
        until = end
        return end
    }

    public mutating func clear() {
        refusals = 0
        until = nil
    }
}
