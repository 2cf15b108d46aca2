import AgentCore
import CCurl
import Foundation

/// `HTTPTransport` over one libcurl easy handle. Keeping the handle for a whole upload
/// cycle keeps its connection (and TLS session) open between the cycle's batches.
/// Not thread-safe: one cycle uses it on one thread, then drops it.
public final class CurlTransport: HTTPTransport {
    /// Answers are small JSON; more than this is cut (the status code still counts).
    public static let maxResponseBytes = 64 * 1024

    private let handle: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private let context: CallbackContext

    /// How long a stop waits for the answer to a request whose body was sent.
    public static let answerGrace: Duration = .seconds(5)

    /// The standard factory for the uploader: libcurl to the server, or, for a Virtues
    /// box, libcurl to the iroh bridge that carries each request to the box (`BoxTransport`).
    public static let factory: HTTPTransportFactory = { settings, isCancelled in
        if settings.box != nil && settings.unixSocket == nil { return try BoxTransport(settings: settings, isCancelled: isCancelled) }
        return try CurlTransport(settings: settings, isCancelled: isCancelled)
    }

    /// - Parameter isCancelled: polled about once a second while a request runs;
    ///   returning true aborts it (so `stop()` does not wait out a 30 s time-out), at once
    ///   while its body is still going out, after `answerGrace` once the whole body is sent
    ///   (the server may already have stored it: abandoned, it would be sent again).
    public init(settings: ServerSettings, isCancelled: @escaping @Sendable () -> Bool = { false }) throws {
        guard CurlRuntime.ensureInitialised() else {
            throw TransportFailure(kind: .other, detail: "libcurl could not initialise its TLS library: reinstall libcurl4-openssl-dev")
        }
        guard let handle = curl_easy_init() else {
            throw TransportFailure(kind: .other, detail: "libcurl could not create a handle (out of memory?)")
        }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        context = CallbackContext(isCancelled: isCancelled)

        // Signals are process-wide and the daemon has other threads: libcurl must not
        // use SIGALRM for its time-outs.
        setLong(CURLOPT_NOSIGNAL, 1)
        setLong(CURLOPT_TIMEOUT, settings.requestTimeout)
        setLong(CURLOPT_CONNECTTIMEOUT, settings.connectTimeout)
        // Verification is always on; a self-signed server is trusted through ca_file.
        setLong(CURLOPT_SSL_VERIFYPEER, 1)
        setLong(CURLOPT_SSL_VERIFYHOST, 2)
        switch CATrust.resolve(caFile: settings.caFile, systemDirectory: CurlRuntime.defaultCADirectory) {
        case .bundle(let path):
            setString(CURLOPT_CAINFO, path)
        case .directory(let path):
            // No bundle parsed whole: the directory's certificates are read as a chain needs them.
            _ = ariata_curl_setopt_ptr(handle, CURLOPT_CAINFO, nil)
            setString(CURLOPT_CAPATH, path)
        case .libraryDefaults:
            break
        }
        if let sessions = CurlTLSSessions.shared {
            _ = ariata_curl_setopt_ptr(handle, CURLOPT_SHARE, sessions.handle)
        }
        setString(CURLOPT_USERAGENT, AgentVersion.userAgent)
        setString(CURLOPT_PROTOCOLS_STR, "http,https")
        setLong(CURLOPT_TCP_KEEPALIVE, 1)
        if let socket = settings.unixSocket {
            // A Virtues box: every request is one connection to the bridge, which carries
            // it as one iroh stream, and each stream is one HTTP exchange (docs/upload.md).
            setString(CURLOPT_UNIX_SOCKET_PATH, socket)
            setLong(CURLOPT_FORBID_REUSE, 1)
        }
        _ = ariata_curl_setopt_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer)

        let opaque = Unmanaged.passUnretained(context).toOpaque()
        _ = ariata_curl_setopt_writefn(handle) { data, size, count, user in
            guard let data, let user else { return 0 }
            Unmanaged<CallbackContext>.fromOpaque(user).takeUnretainedValue().appendBody(data, size * count)
            return size * count
        }
        _ = ariata_curl_setopt_ptr(handle, CURLOPT_WRITEDATA, opaque)
        _ = ariata_curl_setopt_headerfn(handle) { data, size, count, user in
            guard let data, let user else { return 0 }
            Unmanaged<CallbackContext>.fromOpaque(user).takeUnretainedValue().headerLine(data, size * count)
            return size * count
        }
        _ = ariata_curl_setopt_ptr(handle, CURLOPT_HEADERDATA, opaque)
        _ = ariata_curl_setopt_xferinfofn(handle) { user, _, _, uploadTotal, uploaded in
            guard let user else { return 0 }
            let bodySent = uploadTotal > 0 && uploaded >= uploadTotal
            return Unmanaged<CallbackContext>.fromOpaque(user).takeUnretainedValue().shouldAbort(bodySent: bodySent) ? 1 : 0
        }
        _ = ariata_curl_setopt_ptr(handle, CURLOPT_XFERINFODATA, opaque)
        setLong(CURLOPT_NOPROGRESS, 0)
        // The body is read from its pieces as curl sends it (no copy into one buffer), and
        // read again from the start when curl must resend it on a new connection.
        _ = ariata_curl_setopt_readfn(handle) { buffer, size, count, user in
            guard let buffer, let user else { return Int(CURL_READFUNC_ABORT) }
            return Unmanaged<CallbackContext>.fromOpaque(user).takeUnretainedValue().readBody(into: buffer, size * count)
        }
        _ = ariata_curl_setopt_ptr(handle, CURLOPT_READDATA, opaque)
        _ = ariata_curl_setopt_seekfn(handle) { user, offset, origin in
            guard let user, origin == SEEK_SET,
                  Unmanaged<CallbackContext>.fromOpaque(user).takeUnretainedValue().seekBody(to: Int(offset)) else {
                return CURL_SEEKFUNC_CANTSEEK
            }
            return CURL_SEEKFUNC_OK
        }
        _ = ariata_curl_setopt_ptr(handle, CURLOPT_SEEKDATA, opaque)
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    public func send(_ request: HTTPRequest) -> Result<HTTPResponse, TransportFailure> {
        context.reset(body: request.body)
        defer { context.reset(body: RequestBody()) }
        errorBuffer[0] = 0
        setString(CURLOPT_URL, request.url)
        var list: UnsafeMutablePointer<curl_slist>?
        for header in request.headers {
            list = curl_slist_append(list, "\(header.name): \(header.value)")
        }
        // curl would send `Expect: 100-continue` for large bodies and wait for the
        // server's go-ahead: one round trip more per batch for nothing.
        list = curl_slist_append(list, "Expect:")
        defer { curl_slist_free_all(list) }
        _ = ariata_curl_setopt_ptr(handle, CURLOPT_HTTPHEADER, list)

        switch request.method {
        case .post:
            setLong(CURLOPT_POST, 1)
            // Without POSTFIELDS curl reads the body through the read callback; its size is
            // known, so it goes with a Content-Length (not chunked).
            _ = ariata_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
        case .get:
            setLong(CURLOPT_HTTPGET, 1)
        }
        let code = curl_easy_perform(handle)
        _ = ariata_curl_setopt_ptr(handle, CURLOPT_HTTPHEADER, nil)
        guard code == CURLE_OK else { return .failure(failure(for: code)) }
        var status = 0
        _ = ariata_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .success(HTTPResponse(status: status, headers: context.headers, body: context.body))
    }

    private func failure(for code: CURLcode) -> TransportFailure {
        let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
        let kind: TransportFailure.Kind = switch code {
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .nameNotResolved
        case CURLE_COULDNT_CONNECT: .cannotConnect
        case CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_PARTIAL_FILE: .connectionLost
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM: .tls
        case CURLE_ABORTED_BY_CALLBACK: .cancelled
        default: .other
        }
        return TransportFailure(kind: kind, detail: kind == .other ? "curl error \(code.rawValue): \(detail)" : detail)
    }

    private func setLong(_ option: CURLoption, _ value: Int) {
        _ = ariata_curl_setopt_long(handle, option, value)
    }

    /// libcurl copies string options, so a temporary C string is enough.
    private func setString(_ option: CURLoption, _ value: String) {
        _ = value.withCString { ariata_curl_setopt_ptr(handle, option, $0) }
    }
}

/// What libcurl's callbacks write into for one request. Reached through an opaque
/// pointer from C; only the thread running `curl_easy_perform` touches it.
private final class CallbackContext {
    let isCancelled: @Sendable () -> Bool
    private(set) var body = Data()
    private(set) var headers: [String: String] = [:]
    /// The request's body and how far curl has read it: the piece and the offset in it.
    private var requestBody = RequestBody()
    private var piece = 0
    private var offset = 0

    /// When a cancellation was first seen after the request's body had gone out.
    private var cancelledAfterSending: ContinuousClock.Instant?

    init(isCancelled: @escaping @Sendable () -> Bool) {
        self.isCancelled = isCancelled
    }

    /// Whether to abort now: a request still sending its body at once; one whose body the
    /// server has is given `CurlTransport.answerGrace` for its answer (docs/upload.md, "TLS and libcurl").
    func shouldAbort(bodySent: Bool) -> Bool {
        guard isCancelled() else { return false }
        guard bodySent else { return true }
        let now = ContinuousClock.now
        let since = cancelledAfterSending ?? now
        cancelledAfterSending = since
        return now - since >= CurlTransport.answerGrace
    }

    func reset(body requestBody: RequestBody) {
        cancelledAfterSending = nil
        body = Data()
        headers = [:]
        self.requestBody = requestBody
        piece = 0
        offset = 0
    }

    /// Copies up to `capacity` bytes of the request body from where curl got to; 0 at the end.
    func readBody(into buffer: UnsafeMutablePointer<CChar>, _ capacity: Int) -> Int {
        var written = 0
        let pieces = requestBody.pieces
        while written < capacity, piece < pieces.count {
            let current = pieces[piece]
            let n = min(capacity - written, current.count - offset)
            let from = current.startIndex + offset
            (buffer + written).withMemoryRebound(to: UInt8.self, capacity: n) {
                _ = current.copyBytes(to: UnsafeMutableBufferPointer(start: $0, count: n), from: from..<from + n)
            }
            written += n
            offset += n
            if offset == current.count {
                piece += 1
                offset = 0
            }
        }
        return written
    }

    /// Goes back to `position` bytes into the body (curl resends a request from its start
    /// when a kept-alive connection turned out closed). False past the end.
    func seekBody(to position: Int) -> Bool {
        guard position >= 0, position <= requestBody.count else { return false }
        var rest = position
        piece = 0
        for data in requestBody.pieces {
            if rest < data.count { break }
            rest -= data.count
            piece += 1
        }
        offset = rest
        return true
    }

    func appendBody(_ bytes: UnsafePointer<CChar>, _ count: Int) {
        let room = CurlTransport.maxResponseBytes - body.count
        guard room > 0 else { return }
        bytes.withMemoryRebound(to: UInt8.self, capacity: count) { body.append($0, count: min(count, room)) }
    }

    func headerLine(_ bytes: UnsafePointer<CChar>, _ count: Int) {
        let line = bytes.withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
        if line.hasPrefix("HTTP/") {
            // A new status line (after a 100 Continue, say): only the final answer counts.
            headers = [:]
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        // Trimmed with the standard library, not Foundation's CharacterSet: this runs in
        // every upload cycle (docs/decisions/0005-start-up-page-drop.md).
        let name = line[..<colon].trimmingWhitespace().lowercased()
        let value = String(line[line.index(after: colon)...].trimmingWhitespace())
        headers[name] = value
    }
}
