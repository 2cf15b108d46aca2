import Foundation

/// One request to send: a POST with a body (every upload), or a GET without one (the
/// link check of `onboard --link`, docs/install.md).
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable {
        case post = "POST"
        case get = "GET"
    }

    public var method: Method = .post
    public var url: String
    /// Header lines in order; names as sent.
    public var headers: [(name: String, value: String)]
    public var body: RequestBody

    public init(url: String, headers: [(name: String, value: String)], body: RequestBody) {
        self.url = url
        self.headers = headers
        self.body = body
    }

    public init(url: String, headers: [(name: String, value: String)], body: Data) {
        self.init(url: url, headers: headers, body: RequestBody([body]))
    }

    /// A GET of `url`: no body.
    public static func get(url: String, headers: [(name: String, value: String)]) -> HTTPRequest {
        var request = HTTPRequest(url: url, headers: headers, body: RequestBody())
        request.method = .get
        return request
    }
}

/// A request body as pieces sent one after the other. An ingest body is its envelope
/// around the stored records' own bytes (`IngestBody`), so the records are sent from
/// where they are and never copied into one buffer as large as the batch
/// (docs/upload.md).
public struct RequestBody: Sendable, Equatable {
    public private(set) var pieces: [Data] = []
    /// Bytes in all the pieces.
    public private(set) var count = 0

    public init(_ pieces: [Data] = []) {
        for piece in pieces { append(piece) }
    }

    public mutating func append(_ piece: Data) {
        guard !piece.isEmpty else { return }
        pieces.append(piece)
        count += piece.count
    }

    public mutating func append(_ text: String) { append(Data(text.utf8)) }

    /// The whole body in one buffer (a copy: for tests and for what must see it whole).
    public var joined: Data {
        var whole = Data(capacity: count)
        for piece in pieces { whole.append(piece) }
        return whole
    }
}

/// What a server answered.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    /// Header names lowercased; a repeated header keeps its last value.
    public var headers: [String: String]
    /// The body, cut at the transport's limit (answers are small JSON; a server that
    /// sends megabytes back must not make the agent hold them).
    public var body: Data

    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// A request that got no HTTP answer.
public struct TransportFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The whole request, or the connection, took longer than its time-out.
        case timedOut
        /// Refused or unreachable.
        case cannotConnect
        /// The host name did not resolve (DNS).
        case nameNotResolved
        /// Reset or closed before a complete answer.
        case connectionLost
        /// The server's certificate is not trusted (or TLS failed otherwise).
        case tls
        /// `stop()` aborted the request.
        case cancelled
        /// A Virtues box closed the connection before any HTTP: this device's key is not
        /// (or no longer) on its allowlist.
        case notAllowlisted
        /// A local problem (bad URL, out of memory, ...).
        case other
    }

    public var kind: Kind
    /// What libcurl (or the local problem) said, raw: no advice mixed in, so a caller that
    /// shows it (the uploader's log, onboarding) adds the advice that fits its reader.
    public var detail: String

    public init(kind: Kind, detail: String) {
        self.kind = kind
        self.detail = detail
    }

    /// For the uploader's log and `status`: what happened and, where there is one, what to
    /// change in the configuration (onboarding says it with its own flags instead).
    public var description: String {
        switch kind {
        case .timedOut: return "time-out: \(detail)"
        case .nameNotResolved: return "cannot resolve the host name: \(detail)"
        case .cannotConnect: return "cannot connect: \(detail)"
        case .connectionLost: return "connection lost: \(detail)"
        case .tls: return "TLS failed: \(detail); if the server uses a self-signed certificate, set [server] ca_file to its CA certificate (a PEM file, or a directory indexed by openssl rehash)"
        case .cancelled: return "cancelled: the uploader is stopping"
        case .notAllowlisted: return "the box refused the connection (\(detail))"
        case .other: return detail
        }
    }
}

/// The seam between the upload rules and HTTP. One transport serves one upload cycle on
/// one thread and keeps its connection open between the requests of that cycle.
public protocol HTTPTransport: AnyObject {
    func send(_ request: HTTPRequest) -> Result<HTTPResponse, TransportFailure>
}

/// How the uploader gets a transport for each cycle (tests and benchmarks may wrap it).
public typealias HTTPTransportFactory = @Sendable (_ server: ServerSettings, _ isCancelled: @escaping @Sendable () -> Bool) throws -> any HTTPTransport
