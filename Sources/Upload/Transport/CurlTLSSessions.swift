import CCurl
import Glibc

/// The TLS sessions of every libcurl handle in the process, kept in one curl share handle,
/// so that a new connection to a server already met resumes its session instead of a full
/// handshake (docs/upload.md#tls-sessions). Each upload cycle and each ask for the server's
/// switches uses a handle of its own; without this each one parsed and verified the
/// server's certificate chain again.
///
/// The share is used from several threads (the upload cycles' queue, the switches' thread,
/// `sync`), so libcurl is given a lock per kind of shared data.
final class CurlTLSSessions: @unchecked Sendable {
    /// nil when libcurl could not make a share handle: connections then make full handshakes.
    static let shared: CurlTLSSessions? = CurlRuntime.ensureInitialised() ? CurlTLSSessions() : nil

    /// The share handle, for `CURLOPT_SHARE`. Never cleaned up: it lives as long as the process.
    let handle: UnsafeMutableRawPointer
    private let locks: UnsafeMutablePointer<pthread_mutex_t>
    private static let lockCount = Int(CURL_LOCK_DATA_LAST.rawValue)

    private init?() {
        guard let handle = curl_share_init() else { return nil }
        self.handle = handle
        locks = .allocate(capacity: Self.lockCount)
        for index in 0..<Self.lockCount { pthread_mutex_init(locks + index, nil) }
        _ = ariata_curl_share_setopt_ptr(handle, CURLSHOPT_USERDATA, locks)
        _ = ariata_curl_share_setopt_lockfn(handle) { _, data, _, user in
            guard let user, Int(data.rawValue) < CurlTLSSessions.lockCount else { return }
            pthread_mutex_lock(user.assumingMemoryBound(to: pthread_mutex_t.self) + Int(data.rawValue))
        }
        _ = ariata_curl_share_setopt_unlockfn(handle) { _, data, user in
            guard let user, Int(data.rawValue) < CurlTLSSessions.lockCount else { return }
            pthread_mutex_unlock(user.assumingMemoryBound(to: pthread_mutex_t.self) + Int(data.rawValue))
        }
        guard ariata_curl_share_setopt_long(handle, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue)) == CURLSHE_OK else {
            return nil
        }
    }

    /// Runs only when `init` fails after making the handle (the shared one is never released).
    deinit {
        curl_share_cleanup(handle)
        for index in 0..<Self.lockCount { pthread_mutex_destroy(locks + index) }
        locks.deallocate()
    }
}
