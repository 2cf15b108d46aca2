import AgentCore
import CCrypto
import Foundation

/// The `X-Batch-Id` of a batch: a name-based UUID (version 5) of the stream and the ids of
/// its records in order.
///
/// Derived, not stored: the same records always give the same id, on every retry and
/// across restarts, with nothing to keep in the database. And the converse holds too,
/// which is what makes it safe for a server to drop a batch whose id it has seen: a
/// batch that differs by one record (new records arrived since the last try, or a
/// record was isolated by a split) gets a different id, so no record can be dropped as
/// a "duplicate" of a batch it was never part of. A stored id would need the stored
/// list of its records as well to give that guarantee.
public enum BatchID {
    /// The namespace of ariata batch ids (a fixed random UUID).
    /// 5c0f3b8e-6a41-4d1e-9b7a-2f6d8c4e1a90
    static let namespace = UUID(uuid: (0x5C, 0x0F, 0x3B, 0x8E, 0x6A, 0x41, 0x4D, 0x1E,
                                       0x9B, 0x7A, 0x2F, 0x6D, 0x8C, 0x4E, 0x1A, 0x90))

    public static func make(stream: StreamName, recordIDs: [UUID]) -> UUID {
        var name = [UInt8](stream.wireName.utf8)
        name.reserveCapacity(name.count + 1 + 16 * recordIDs.count)
        name.append(0)
        for id in recordIDs { name.append(contentsOf: bytes(of: id)) }
        return v5(namespace: namespace, name: name)
    }

    /// RFC 9562 section 5.5: SHA-1 of namespace and name, version and variant bits set.
    static func v5(namespace: UUID, name: [UInt8]) -> UUID {
        var d = sha1(bytes(of: namespace) + name)
        d[6] = (d[6] & 0x0F) | 0x50
        d[8] = (d[8] & 0x3F) | 0x80
        return UUID(uuid: (d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7],
                           d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15]))
    }

    /// SHA-1 through OpenSSL's libcrypto; here a fingerprint, not a security measure.
    static func sha1(_ data: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        data.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                _ = SHA1(input.baseAddress, input.count, output.baseAddress)
            }
        }
        return digest
    }

    static func bytes(of id: UUID) -> [UInt8] {
        withUnsafeBytes(of: id.uuid) { Array($0) }
    }
}
