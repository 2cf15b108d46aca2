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
