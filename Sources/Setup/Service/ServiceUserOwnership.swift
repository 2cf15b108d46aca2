import Foundation

/// Files onboarding creates as root that the daemon must write later (the queue database
/// of a backfill) are handed to the service user, as the config file is.
enum ServiceUserOwnership {
    /// Hands each existing path to `user` when we are root and the user exists; does
    /// nothing otherwise (a user who onboards as themselves keeps their own files).
    static func hand(_ paths: [String], to user: String) {
        guard getuid() == 0, let entry = getpwnam(user) else { return }
        let uid = entry.pointee.pw_uid
        let gid = entry.pointee.pw_gid
        for path in paths where FileManager.default.fileExists(atPath: path) {
            chown(path, uid, gid)
        }
    }

    /// The name of the user who will own a file written now for `serviceUser`.
    static func owner(for serviceUser: String) -> String {
        if getuid() == 0, getpwnam(serviceUser) != nil { return serviceUser }
        return getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? "uid \(getuid())"
    }
}

extension ServiceUserOwnership {
    /// The service user must reach the config file through its directory. A directory it
    /// cannot enter (e.g. /etc/ariata made root:root 0750; systemd does not hand a
    /// ConfigurationDirectory= to the unit's user) gets the service user's group; a
    /// directory anyone may enter (/etc) is left alone.
    static func letEnter(_ directory: String, user: String) -> String? {
        guard getuid() == 0, let entry = getpwnam(user) else { return nil }
        var info = stat()
        guard stat(directory, &info) == 0, info.st_mode & S_IXOTH == 0 else { return nil }
        let gid = entry.pointee.pw_gid
        if info.st_gid != gid || info.st_mode & S_IXGRP == 0 {
            guard chown(directory, uid_t.max, gid) == 0, chmod(directory, (info.st_mode & 0o7777) | S_IXGRP | S_IRGRP) == 0 else {
                return "could not let \(user) enter \(directory): \(String(cString: strerror(errno))); run: sudo chgrp \(user) \(directory)"
            }
            let group = getgrgid(gid).map { String(cString: $0.pointee.gr_name) } ?? "\(gid)"
            return "\(directory) now belongs to group \(group), so \(user) can read the file in it"
        }
        return nil
    }
}
