import AgentCore
import Foundation
import Platform

/// One kind of location source (gpsd, GeoClue): it runs on the stream's thread, hands each
/// fix to the stream, says when one is due to be written, and judges its own quiet. The
/// stream knows only this; which kind runs is `LocationSourceChooser`'s to say. A new kind
/// is a folder beside GPSD/ and GeoClue/ and a line in the chooser (docs/streams/location.md).
protocol LocationSource: Sendable {
    var kind: FixSource { get }
    /// Where it is, for the status and log lines: gpsd's host:port, GeoClue's bus.
    var address: String { get }

    /// Runs until `waker` is woken (`.stopped`) or another source should take over
    /// (`.handOver`). Blocks on the stream's thread; fixes and ticks may come from another
    /// thread of the source's own (GeoClue's bus thread).
    func run(until waker: Waker, feed: any LocationFeed) -> LocationSourceEnd

    /// The stream's liveness while the link is up and records are written: how long this
    /// kind may stay without a fix, and what to tell the user when it has been too long.
    func quietLiveness(connectedSince: Date, lastFixAge: TimeInterval?, now: Date) -> Liveness
}

/// What a running source gives the stream (the stream is the feed).
protocol LocationFeed: AnyObject, Sendable {
    /// A fix: kept as the latest, written at the next tick. True when it is the stream's
    /// first, for the source to log in its own words.
    @discardableResult
    func received(_ fix: LocationFix) -> Bool
    /// A sampling tick: the latest fix is written if it has not been. gpsd ticks every
    /// interval; GeoClue, which paces its own fixes, after each one.
    func tick()
    /// Whether a fix waits for a tick (a source that sleeps between reads wakes for it).
    var hasPendingFix: Bool { get }
    func linkChanged(_ link: LocationLink)
}

/// Why a source's `run` returned.
enum LocationSourceEnd: Sendable {
    /// The stream stopped it.
    case stopped
    /// The source it watched for can serve now: the stream runs that one instead.
    case handOver(LocationHandover)
}

/// A source to move to once it can serve, watched by the source in use (with `auto`:
/// GeoClue until gpsd has a receiver).
struct LocationHandover: Sendable {
    let next: any LocationSource
    /// Why the stream moves, for the status and the log.
    let reason: String
    /// How often the source in use asks `isReady`.
    let checkEvery: TimeInterval
    let isReady: @Sendable () -> Bool
}
