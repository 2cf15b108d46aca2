import Foundation

/// A self-signed certificate and key for 127.0.0.1 (RSA 2048, as a small server's), made
/// by openssl: what a receiver rig serves HTTPS with (`ReceiverRig(tls:)`) and an agent
/// trusts as its `ca_file`.
public struct SelfSignedCertificate: Sendable {
    public let certificate: String
    public let key: String

    /// Makes `cert.pem` and `key.pem` in `directory`.
    public init(in directory: String) throws {
        certificate = (directory as NSString).appendingPathComponent("cert.pem")
        key = (directory as NSString).appendingPathComponent("key.pem")
        let openssl = try ChildProcess("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ], logDirectory: directory)
        guard openssl.wait(timeout: 60) == 0 else { throw RigFailure("openssl failed: \(openssl.stderr())") }
    }

    /// What `ReceiverRig(tls:)` and `DaemonRig(tls:)` take.
    public var pair: (certificate: String, key: String) { (certificate, key) }

    /// Makes `directory` a directory of trusted certificates as OpenSSL looks them up, by
    /// subject hash (what `[server] ca_file` may name instead of a file): this certificate
    /// and, with `systemCAs`, links to the system's (/etc/ssl/certs/*.pem), indexed by
    /// `openssl rehash`.
    public func makeTrustDirectory(_ directory: String, systemCAs: Bool) throws {
        let files = FileManager.default
        try files.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try files.copyItem(atPath: certificate, toPath: (directory as NSString).appendingPathComponent("receiver.pem"))
        if systemCAs {
            for name in try files.contentsOfDirectory(atPath: "/etc/ssl/certs") where name.hasSuffix(".pem") {
                try files.createSymbolicLink(atPath: (directory as NSString).appendingPathComponent(name),
                                             withDestinationPath: "/etc/ssl/certs/\(name)")
            }
        }
        let rehash = try ChildProcess("/usr/bin/openssl", ["rehash", directory], logDirectory: (certificate as NSString).deletingLastPathComponent)
        guard rehash.wait(timeout: 60) == 0 else { throw RigFailure("openssl rehash failed: \(rehash.stderr())") }
    }
}
