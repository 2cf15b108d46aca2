import AgentCore
import CCrypto
import Foundation

/// This device's iroh identity for a Virtues box: a 32-byte Ed25519 seed, kept like the
/// device token (`[box] key`, in the 0600 configuration, never printed or logged), and its
/// public key, the **EndpointId** the box allowlists at pairing and the transport proves
/// on every connection. The public key is derived with libcrypto; the transport itself
/// (the bridge) takes the seed (docs/install.md, "Pairing with a Virtues box").
public struct DeviceKey: Sendable, Equatable {
    /// The seed as 64 lower-case hex characters: what `[box] key` holds.
    public let seed: Secret
    /// The public key as 64 lower-case hex characters, as the box compares it (as text).
    public let endpointID: String

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A new identity from the system's random source.
    public static func generate() throws -> DeviceKey {
        var bytes = [UInt8](repeating: 0, count: 32)
        guard RAND_bytes(&bytes, 32) == 1 else {
            throw Failure(description: "libcrypto could not draw 32 random bytes for the device key")
        }
        return try DeviceKey(seedBytes: bytes)
    }

    /// The identity of a kept seed (`[box] key`).
    public init(seedHex: Secret) throws {
        guard BoxConfig.isKeyHex(seedHex.value), let bytes = [UInt8](lowercaseHex: seedHex.value) else {
            throw Failure(description: "the device key is not 64 lower-case hex characters")
        }
        try self.init(seedBytes: bytes)
    }

    private init(seedBytes: [UInt8]) throws {
        guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seedBytes, seedBytes.count) else {
            throw Failure(description: "libcrypto refused the Ed25519 seed")
        }
        defer { EVP_PKEY_free(key) }
        var publicKey = [UInt8](repeating: 0, count: 32)
        var length = publicKey.count
        guard EVP_PKEY_get_raw_public_key(key, &publicKey, &length) == 1, length == 32 else {
            throw Failure(description: "libcrypto could not derive the Ed25519 public key")
        }
        seed = Secret(seedBytes.lowercaseHex)
        endpointID = publicKey.lowercaseHex
    }
}
