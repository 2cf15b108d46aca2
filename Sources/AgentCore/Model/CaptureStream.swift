/// What every capture stream is to the daemon: something that starts, stops and says
/// how it is. The stream writes its records to a `RecordSink` given at creation.
public protocol CaptureStream: AnyObject, Sendable {
    var stream: StreamName { get }
    /// Starts capture on the stream's own thread; returns at once.
    func start()
    /// Stops capture, finishing and writing what is in progress; returns when done.
    func stop()
    func liveness() -> Liveness
    /// Running totals `status` shows (e.g. the health stream's malformed lines), by name.
    func counters() -> [String: Int]
    /// What the stream is doing right now that `status` shows as text (the microphone's
    /// device in use and why), by name; replaced at every maintenance round.
    func details() -> [String: String]
    /// For a stream made of parts that fail alone (the health stream's sources): restarts
    /// only the parts at fault and says what it did. nil (the default): the supervisor
    /// restarts the whole stream.
    func restartFaults() -> String?
    /// Whether some part of an unhealthy stream still captures (a health stream whose file
    /// source reads while its strap is away): its coverage is then `captured`, and its
    /// liveness still names the part at fault. false (the default): a stream's fault is
    /// the whole stream's.
    func capturesInPart() -> Bool
}

extension CaptureStream {
    public func counters() -> [String: Int] { [:] }
    public func details() -> [String: String] { [:] }
    public func restartFaults() -> String? { nil }
    public func capturesInPart() -> Bool { false }
}
