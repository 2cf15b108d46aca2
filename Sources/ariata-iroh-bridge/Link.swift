#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Iroh
import Synchronization

/// The device's iroh endpoint and its one connection to the box, made again when it has
/// closed. Streams are opened on the current connection.
actor Link {
    let endpoint: Endpoint
    private let boxAddr: EndpointAddr
    private let alpn: Data
    private let timeout: Double
    private var connection: Connection?
    private var dialing: Task<Connection, any Error>?

    private init(endpoint: Endpoint, boxAddr: EndpointAddr, alpn: Data, timeout: Double) {
        self.endpoint = endpoint
        self.boxAddr = boxAddr
        self.alpn = alpn
        self.timeout = timeout
    }

    /// Binds the device's endpoint: the minimal preset (no discovery, no n0 relays), the
    /// given relay only (or none), the device's key; any local port.
    static func bind(_ config: BridgeConfig) async throws(BridgeFailure) -> Link {
        let builder = EndpointBuilder()
        builder.applyMinimal()
        if let relay = config.relayURL {
            do {
                builder.relayMode(mode: try RelayMode.customFromUrls(urls: [relay]))
            } catch {
                throw BridgeFailure(.badConfig, "relay_url is not a relay URL iroh accepts")
            }
        } else {
            builder.relayMode(mode: RelayMode.disabled())
        }
        do {
            try builder.secretKey(bytes: Data(config.secretSeed))
        } catch {
            throw BridgeFailure(.badConfig, "secret_key is not a usable Ed25519 seed")
        }
        let endpoint: Endpoint
        do {
            endpoint = try await builder.bind()
        } catch {
            throw BridgeFailure(.bindFailed, "cannot bind the iroh endpoint: \(describe(error))")
        }
        let boxId: EndpointId
        do {
            boxId = try EndpointId.fromBytes(bytes: Data(config.boxNodeId))
        } catch {
            throw BridgeFailure(.badConfig, "box_node_id is not an EndpointId")
        }
        let addr = EndpointAddr(id: boxId, relayUrl: config.relayURL, addresses: config.directAddrs)
        return Link(endpoint: endpoint, boxAddr: addr, alpn: Data(config.alpn.utf8),
                    timeout: config.connectTimeoutSeconds)
    }

    /// This endpoint's id, 64 lower-case hex characters.
    nonisolated var endpointId: String { lowercaseHex(endpoint.id().toBytes()) }

    /// The first connection, before the bridge says it is ready. A box that does not know
    /// this device closes the connection right after the handshake (code 1, "not
    /// allowlisted"), so the connection is given a moment (a few round trips) to be closed.
    func connectFirst() async throws(BridgeFailure) -> Connection {
        let connection = try await current()
        let rtt = Double(connection.rtt() ?? 0) / 1000
        let grace = min(max(4 * rtt, 0.25), 2)
        if let reason = await withTimeout(grace, { await connection.closed() }) {
            self.connection = nil
            throw classifyClose(reason, connecting: true)
        }
        return connection
    }

    /// The open connection to the box, connecting again first if it has closed.
    func current() async throws(BridgeFailure) -> Connection {
        if let connection, connection.closeReason() == nil { return connection }
        connection = nil
        let task: Task<Connection, any Error>
        if let dialing {
            task = dialing
        } else {
            let endpoint = endpoint, addr = boxAddr, alpn = alpn, timeout = timeout
            task = Task { try await Link.dial(endpoint: endpoint, addr: addr, alpn: alpn, timeout: timeout) }
            dialing = task
        }
        do {
            let made = try await task.value
            if dialing == task { dialing = nil; connection = made }
            return made
        } catch {
            if dialing == task { dialing = nil }
            throw (error as? BridgeFailure) ?? BridgeFailure(.connectionFailed, describe(error))
        }
    }

    /// A new bidirectional stream on the connection. A connection found closed is made
    /// again once before giving up (nothing has been sent on it yet).
    func openStream() async throws(BridgeFailure) -> (BiStream, Connection) {
        var lastError: BridgeFailure?
        for _ in 0..<2 {
            let connection = try await current()
            do {
                return (try await connection.openBi(), connection)
            } catch {
                if let reason = connection.closeReason() {
                    lastError = classifyClose(reason, connecting: false)
                    if lastError?.code == .notAllowlisted { break }
                    continue
                }
                throw BridgeFailure(.connectionFailed, "cannot open a stream to the box: \(describe(error))")
            }
        }
        throw lastError ?? BridgeFailure(.connectionLost, "the connection to the box closed")
    }

    /// How the connection goes now: "direct", "relay" or "unknown".
    nonisolated static func pathKind(_ connection: Connection) -> String {
        let paths = connection.paths()
        guard let selected = paths.first(where: { $0.isSelected }) else { return "unknown" }
        if selected.isIp { return "direct" }
        if selected.isRelay { return "relay" }
        return "unknown"
    }

    /// Closes the endpoint, waiting at most `seconds` for it to say goodbye to the box.
    func close(within seconds: Double) async {
        let endpoint = endpoint
        _ = await withTimeout(seconds) { try? await endpoint.close() }
    }

    private static func dial(endpoint: Endpoint, addr: EndpointAddr, alpn: Data, timeout: Double) async throws -> Connection {
        let outcome: Result<Connection, any Error>? = await withTimeout(timeout) {
            do { return .success(try await endpoint.connect(addr: addr, alpn: alpn)) } catch { return .failure(error) }
        }
        switch outcome {
        case nil:
            throw BridgeFailure(.unreachable, "no answer from the box within \(formatSeconds(timeout)) s (no working path over its direct addresses or relay)")
        case .success(let connection)?:
            return connection
        case .failure(let error)?:
            throw classifyConnectError(error)
        }
    }
}

/// The failure a connection's close reason stands for.
func classifyClose(_ reason: String, connecting: Bool) -> BridgeFailure {
    if isNotAllowlisted(reason) {
        return BridgeFailure(.notAllowlisted, "the box does not know this device's key (closed: not allowlisted); pair it again")
    }
    if connecting {
        return BridgeFailure(.connectionFailed, "the box closed the connection: \(reason)")
    }
    return BridgeFailure(.connectionLost, "the connection to the box closed: \(reason)")
}

/// The box closes the connection of an unknown key with application code 1 and reason
/// "not allowlisted". iroh reports it as "closed by peer: not allowlisted (code 1)" (a
/// close reason) or ApplicationClosed(ApplicationClose { error_code: 1, … }) (an error).
func isNotAllowlisted(_ text: String) -> Bool {
    text.contains("not allowlisted") || text.contains("(code 1)") || text.contains("error_code: 1,")
}

func classifyConnectError(_ error: any Error) -> BridgeFailure {
    let text = describe(error)
    if isNotAllowlisted(text) {
        return BridgeFailure(.notAllowlisted, "the box does not know this device's key (closed: not allowlisted); pair it again")
    }
    let lower = text.lowercased()
    if lower.contains("timed out") || lower.contains("timeout") || lower.contains("no route") || lower.contains("no address")
        || lower.contains("unreachable") {
        return BridgeFailure(.unreachable, "cannot reach the box: \(text)")
    }
    return BridgeFailure(.connectionFailed, "cannot connect to the box: \(text)")
}

/// An error's text for people: IrohError's message, else the error's description.
func describe(_ error: any Error) -> String {
    if let iroh = error as? IrohError { return iroh.message() }
    if let failure = error as? BridgeFailure { return failure.message }
    return String(describing: error)
}

func formatSeconds(_ value: Double) -> String {
    value == value.rounded() ? String(Int(value)) : String(value)
}

/// `operation`'s result, or nil if it has not finished within `seconds`. The iroh
/// library's calls cannot be cancelled, so an operation that overruns is left to finish
/// on its own in the background, its result dropped.
func withTimeout<T: Sendable>(_ seconds: Double, _ operation: @escaping @Sendable () async -> T) async -> T? {
    await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        let once = ResumeOnce(continuation)
        let timer = Task {
            do { try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000)) } catch { return }
            once.resume(nil)
        }
        Task {
            let value = await operation()
            once.resume(value)
            timer.cancel()
        }
    }
}

/// A continuation the first of several racers resumes; the others find it taken.
final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: CheckedContinuation<T?, Never>
    // A Mutex of a non-generic type: Swift 6.0's compiler (Debian 13's) crashes on a Mutex
    // of a generic one in a debug build.
    private let resumed = Mutex(false)

    init(_ continuation: CheckedContinuation<T?, Never>) { self.continuation = continuation }

    func resume(_ value: T?) {
        let first = resumed.withLock { done in
            defer { done = true }
            return !done
        }
        if first { continuation.resume(returning: value) }
    }
}
