import Foundation

public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out waiting for \(what)" }
}

/// Polls `condition` every `interval` until it holds or `timeout` passes.
/// Rigs use it to wait for a real process to get somewhere; it is not a timing assertion.
public func waitUntil(_ what: String, timeout: TimeInterval = 20, interval: TimeInterval = 0.05,
                      _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return }
        Thread.sleep(forTimeInterval: interval)
    }
    if try condition() { return }
    throw TimedOut(what: what)
}
