import Foundation

/// Where TLS verification finds the certificates it trusts (docs/upload.md). Verification
/// is always on; this only says where the CAs come from.
///
/// A CA bundle is parsed whole into memory for every upload cycle (every one of the
/// system's CAs, a large part of a cycle's heap), while a directory of certificates named
/// by their subject's hash (what `update-ca-certificates` and `openssl rehash` make) is
/// looked up one certificate at a time, only for the chain the server presents. So the
/// system's CAs are used through their directory when it has such names.
public enum CATrust: Equatable, Sendable {
    /// `[server] ca_file` names a PEM file: its certificates (libcurl's default directory
    /// still counts too, as it always did).
    case bundle(String)
    /// A directory of hashed certificate names, and no bundle: `ca_file` names a directory,
    /// or the system's directory when `ca_file` is unset.
    case directory(String)
    /// libcurl's compiled-in defaults (its bundle and its directory): the system's
    /// directory is missing or holds no hashed names.
    case libraryDefaults

    /// - Parameters:
    ///   - caFile: `[server] ca_file`, a PEM file or a directory.
    ///   - systemDirectory: libcurl's default CA directory (`/etc/ssl/certs` on Debian).
    public static func resolve(caFile: String?, systemDirectory: String?) -> CATrust {
        if let caFile {
            return isDirectory(caFile) ? .directory(caFile) : .bundle(caFile)
        }
        if let systemDirectory, holdsHashedNames(systemDirectory) { return .directory(systemDirectory) }
        return .libraryDefaults
    }

    // Both run for every upload cycle: stat(2) and readdir(3), not FileManager, whose
    // corelibs code would come back into the daemon's resident set with each cycle
    // (docs/decisions/0005-start-up-page-drop.md).
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// True when `directory` holds at least one name OpenSSL's lookup by hash reads:
    /// eight hexadecimal digits, a dot and a number (`002c0b4f.0`). Stops at the first.
    static func holdsHashedNames(_ directory: String) -> Bool {
        guard let stream = opendir(directory) else { return false }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if isHashedName(name) { return true }
        }
        return false
    }

    public static func isHashedName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 8, !parts[1].isEmpty else { return false }
        return parts[0].allSatisfy(\.isHexDigit) && parts[1].allSatisfy(\.isNumber)
    }
}
