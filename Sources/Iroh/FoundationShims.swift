// Written by hand, not generated. The generated bindings (Iroh.swift) import
// FoundationEssentials rather than Foundation where it exists (Linux; see
// scripts/generate-iroh-bindings.sh), to keep ICU out of the bridge. The one thing of full
// Foundation they use is NSLock, for uniffi's handle map: this is the lock they get there.
#if canImport(FoundationEssentials)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

final class NSLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
}
#endif
