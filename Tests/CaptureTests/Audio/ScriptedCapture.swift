import Capture
import Foundation
import Synchronization

/// Fault injection around a real capture: delivers at most `limit` frames from it, can
/// report an overrun at a given frame, and then either ends or goes quiet like a live
/// device with nothing to say. The ALSA file plugin cannot end or overrun by itself.
final class ScriptedCapture: AudioCapture {
    enum AfterLimit { case end, quiet }

    private let inner: any AudioCapture
    private let limit: Int
    private let afterLimit: AfterLimit
    private var overrunAt: Int?
    let progress: Progress

    /// What the test thread can watch while the stream's thread reads.
    final class Progress: Sendable {
        private let state = Mutex((frames: 0, closed: false))
        var frames: Int { state.withLock { $0.frames } }
        var closed: Bool { state.withLock { $0.closed } }
        fileprivate func add(_ count: Int) { state.withLock { $0.frames += count } }
        fileprivate func close() { state.withLock { $0.closed = true } }
    }

    init(_ inner: any AudioCapture, limit: Int, afterLimit: AfterLimit, overrunAt: Int? = nil, progress: Progress = Progress()) {
        self.inner = inner
        self.limit = limit
        self.afterLimit = afterLimit
        self.overrunAt = overrunAt
        self.progress = progress
    }

    var sampleRate: Int { inner.sampleRate }

    func read(into buffer: UnsafeMutableBufferPointer<Int16>) throws(AudioCaptureError) -> CaptureRead {
        let delivered = progress.frames
        if let at = overrunAt, delivered >= at {
            overrunAt = nil
            return .overrun
        }
        let remaining = min(limit - delivered, (overrunAt ?? Int.max) - delivered)
        guard remaining > 0 else {
            switch afterLimit {
            case .end: return .ended
            case .quiet:
                Thread.sleep(forTimeInterval: 0.01)
                return .frames(0)
            }
        }
        let window = UnsafeMutableBufferPointer(rebasing: buffer[0 ..< min(buffer.count, remaining)])
        let result = try inner.read(into: window)
        if case .frames(let count) = result { progress.add(count) }
        return result
    }

    func pendingFrames() -> Int { inner.pendingFrames() }

    var settingsDescription: String { inner.settingsDescription }

    func close() {
        inner.close()
        progress.close()
    }
}

/// Counts factory calls across threads.
final class CallCounter: Sendable {
    private let count = Mutex(0)
    func next() -> Int { count.withLock { $0 += 1; return $0 } }
    var value: Int { count.withLock { $0 } }
}
