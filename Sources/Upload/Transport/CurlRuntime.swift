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

    /// libcurl's compiled-in CA directory (`--with-ca-path`; /etc/ssl/certs on Debian), nil
    /// when it has none. `CATrust` uses it when `[server] ca_file` is unset.
    static let defaultCADirectory: String? = {
        guard ensureInitialised(), let handle = curl_easy_init() else { return nil }
        defer { curl_easy_cleanup(handle) }
        var path: UnsafeMutablePointer<CChar>?
        guard ariata_curl_getinfo_string(handle, CURLINFO_CAPATH, &path) == CURLE_OK, let path else { return nil }
        return String(cString: path)
    }()
}
