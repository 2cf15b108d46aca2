import Foundation
import Rigs

/// A virtual serial cable: socat joins two ptys and links them as `a` and `b` in a
/// directory. The test writes to `a` (the "device"); the source under test reads `b`.
/// `unplug()` kills socat, as pulling a USB adapter removes its tty; `plug()` starts it
/// again under the same names.
public final class PtyRig: @unchecked Sendable {
    // @unchecked: used from one test thread at a time.
    public let a: String
    public let b: String
    private let logDirectory: String
    private var socat: ChildProcess?
    /// `a` stays open while plugged: socat ends when the last opener of a pty closes it.
    private var device: FileHandle?

    public init(directory: String) throws {
        a = "\(directory)/ttyA"
        b = "\(directory)/ttyB"
        logDirectory = directory
        try plug()
    }

    public func plug() throws {
        guard socat == nil else { return }
        removeLinks()
        let child = try ChildProcess("socat", ["-d", "pty,raw,echo=0,link=\(a)", "pty,raw,echo=0,link=\(b)"],
                                     logDirectory: logDirectory)
        socat = child
        try waitUntil("socat to create \(a) and \(b)", timeout: 10) {
            guard child.isRunning else { throw SocatFailed(log: child.stderr()) }
            return FileManager.default.fileExists(atPath: a) && FileManager.default.fileExists(atPath: b)
        }
        guard let handle = FileHandle(forWritingAtPath: a) else { throw SocatFailed(log: "cannot open \(a)") }
        device = handle
    }

    /// Kills socat with SIGKILL (no goodbye) and removes the links it leaves behind, as
    /// udev removes the node of an unplugged adapter.
    public func unplug() {
        try? device?.close()
        device = nil
        socat?.signal(SIGKILL)
        socat?.wait(timeout: 10)
        socat = nil
        removeLinks()
    }

    /// Writes bytes as the device would send them.
    public func send(_ text: String) throws {
        guard let device else { throw SocatFailed(log: "the rig is unplugged") }
        try device.write(contentsOf: Data(text.utf8))
    }

    private func removeLinks() {
        try? FileManager.default.removeItem(atPath: a)
        try? FileManager.default.removeItem(atPath: b)
    }

    deinit { unplug() }
}

public struct SocatFailed: Error, CustomStringConvertible {
    public let log: String
    public var description: String { "socat failed: \(log)" }
}
