import CCurl

/// libcurl's process-wide initialisation, done once. `curl_global_init` is not
/// thread-safe itself; a Swift `static let` is initialised exactly once under a lock
/// the runtime holds, so every transport calls `CurlRuntime.ensureInitialised()` first.
enum CurlRuntime {
    private static let initialised: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    }()

    /// False when libcurl could not initialise (its TLS library failed to load).
    static func ensureInitialised() -> Bool { initialised }
}
