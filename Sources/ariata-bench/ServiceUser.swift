import Foundation
import Rigs

/// The user the footprint benchmark runs the daemon as: the package runs it as its own
/// system user (`ariata`), which may not write the program's or the libraries' files, and
/// the kernel treats such a process differently (`MADV_PAGEOUT` and `POSIX_FADV_DONTNEED`
/// leave those files' pages alone; docs/decisions/0005-start-up-page-drop.md). Measured as
/// root, the daemon would look smaller than it is on a device.
struct ServiceUser {
    let name: String
    let uid: uid_t
    let gid: gid_t

    /// `name` from the password database; a clear error when it is not there.
    init(_ name: String) throws {
        guard let entry = getpwnam(name) else {
            throw BenchFailure("--user \(name): no such user (useradd --system \(name), or name another, e.g. nobody)")
        }
        self.name = name
        uid = entry.pointee.pw_uid
        gid = entry.pointee.pw_gid
    }

    /// The program and arguments that run the daemon as this user, with no supplementary
    /// groups and no capabilities (as the unit does); nil when the daemon would run as
    /// this process's own user anyway.
    func launcher() throws -> [String]? {
        guard uid != getuid() else { return nil }
        return [try ChildProcess.locate("setpriv"), "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--inh-caps=-all", "--"]
    }

    /// Hands `directory` and everything in it to this user: the daemon's configuration,
    /// queue, FIFO and notify socket, which the rig made as this process's user.
    func own(_ directory: String) throws {
        guard uid != getuid() else { return }
        var paths = [directory]
        if let names = FileManager.default.enumerator(atPath: directory) {
            for case let name as String in names { paths.append(directory + "/" + name) }
        }
        for path in paths where lchown(path, uid, gid) != 0 {
            throw BenchFailure("cannot hand \(path) to \(name): \(String(cString: strerror(errno)))")
        }
    }
}
