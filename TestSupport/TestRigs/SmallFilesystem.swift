import Foundation
import Rigs

/// A real, small file system mounted for one test: tmpfs, or ext4 on a loop-mounted image
/// file. Needs root (mount); `make` throws `CannotMount`, saying why, where mounting is
/// not allowed (tests turn it into a skip). Unmounted (lazily, so a child process still closing a file cannot keep it
/// mounted) and removed when dropped.
public final class SmallFilesystem: @unchecked Sendable {
    public enum Kind: String, Sendable { case tmpfs, ext4 }

    public let path: String
    public let kind: Kind
    private let holder: TemporaryDirectory
    private var image: String?

    /// Mounts a file system of `megabytes` MB at a fresh directory.
    public static func make(_ kind: Kind = .tmpfs, megabytes: Int = 40) throws -> SmallFilesystem {
        let holder = try TemporaryDirectory("ariata-smallfs")
        let mountPoint = holder.file("mnt")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        var image: String?
        switch kind {
        case .tmpfs:
            try run("mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0755", "tmpfs", mountPoint], in: holder)
        case .ext4:
            let file = holder.file("fs.img")
            guard FileManager.default.createFile(atPath: file, contents: nil),
                  truncate(file, off_t(megabytes) * 1_048_576) == 0 else {
                throw RigFailure("cannot make the image file \(file)")
            }
            // -m 0: no blocks reserved for root, so "free" means the same to root and to
            // the service user.
            try run("mkfs.ext4", ["-q", "-F", "-m", "0", file], in: holder, skipOnFailure: false)
            try run("mount", ["-o", "loop", file, mountPoint], in: holder)
            image = file
        }
        return SmallFilesystem(path: mountPoint, kind: kind, holder: holder, image: image)
    }

    private init(path: String, kind: Kind, holder: TemporaryDirectory, image: String?) {
        self.path = path
        self.kind = kind
        self.holder = holder
        self.image = image
    }

    public func file(_ name: String) -> String { "\(path)/\(name)" }

    public var freeBytes: Int64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return -1 }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// What another program does: writes `name` with `dd` until the disk is full
    /// (ENOSPC). Returns the bytes it wrote.
    @discardableResult
    public func fillWithAnotherProgram(_ name: String = "filler") throws -> Int64 {
        let target = file(name)
        let dd = try ChildProcess("dd", ["if=/dev/zero", "of=\(target)", "bs=64k", "oflag=append", "conv=notrunc"],
                                  name: "dd", logDirectory: holder.path)
        guard dd.wait(timeout: 120) != nil else { throw RigFailure("dd did not finish filling \(path)") }
        guard dd.stderr().contains("No space left on device") else {
            throw RigFailure("dd stopped before the disk was full: \(dd.stderr())")
        }
        var info = stat()
        return stat(target, &info) == 0 ? Int64(info.st_size) : 0
    }

    deinit {
        _ = try? Self.run("umount", ["-l", path], in: holder, skipOnFailure: false)
    }

    private static func run(_ program: String, _ arguments: [String], in holder: TemporaryDirectory,
                            skipOnFailure: Bool = true) throws {
        let child = try ChildProcess(program, arguments, logDirectory: holder.path)
        let status = child.wait(timeout: 60)
        guard status == 0 else {
            let why = "\(program) \(arguments.joined(separator: " ")) failed (\(status.map(String.init) ?? "timed out")): \(child.stderr())"
            if skipOnFailure {
                throw CannotMount(reason: why)
            }
            throw RigFailure(why)
        }
    }
}

/// Mounting is not possible here (not root, no mount(8), a container without the right).
public struct CannotMount: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { "cannot mount a small file system here (needs root and mount(8)): \(reason)" }
}
