import Synchronization

/// Makes room in the queue for a capture before it is written: the storage guard, which
/// lets the queue grow only while the disk is above its floor and otherwise has the
/// newest captures replace the oldest records (docs/storage.md).
public protocol CaptureRoom: AnyObject, Sendable {
    /// Called before a capture of `bytes` payload bytes is written, and once more with
    /// `refused` after its write failed for lack of space. Returns whether it deleted
    /// anything (a refused write is worth trying again only then).
    @discardableResult
    func makeRoom(forCaptureBytes bytes: Int64, refused: Bool) -> Bool
}

/// The queue's link to its `CaptureRoom`, held weakly: the guard holds the queue.
final class CaptureRoomLink: Sendable {
    private struct Weak: @unchecked Sendable {
        // @unchecked: the referent is Sendable; the box only keeps it weakly.
        weak var room: (any CaptureRoom)?
    }
    private let link = Mutex(Weak())

    var room: (any CaptureRoom)? {
        get { link.withLock { $0.room } }
        set { link.withLock { $0.room = newValue } }
    }
}
