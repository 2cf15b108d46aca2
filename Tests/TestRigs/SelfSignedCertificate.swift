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
}
