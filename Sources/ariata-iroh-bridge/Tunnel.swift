#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Iroh
import Synchronization

/// One connection of the daemon carried as one bidirectional iroh stream: the client's
/// bytes go out as they arrive, the box's answer comes back until its stream ends. The
/// bridge reads no HTTP; it only writes an answer of its own (502) when the box could not
/// be asked at all.
enum Tunnel {
    static let chunk = 64 * 1024

    static func serve(_ client: ClientSocket, link: Link) async {
        // Nothing to carry until the client says something (and a client that closes
        // without a byte costs no stream).
        guard let first = await client.read(max: chunk) else {
            client.close()
            return
        }
        let stream: BiStream, connection: Connection
        do {
            (stream, connection) = try await link.openStream()
        } catch {
            await answerFailure(client, error)
            client.close()
            return
        }
        let send = stream.send(), recv = stream.recv()
        let answer = AnswerProgress()

        // Client to box. The end of the client's data is not passed on while the answer is
        // awaited: the box aborts a stream whose sending side ends before its answer. Only
        // a client that has had (some of) its answer and closed the connection altogether
        // ends the stream from here: the box keeps a stream open for a next request when
        // the request did not say "Connection: close".
        let upload = Task { () -> Bool in
            var pending: [UInt8]? = first
            while let bytes = pending {
                do { try await send.writeAll(buf: Data(bytes)) } catch { return false }
                pending = await client.read(max: chunk)
            }
            guard answer.started, await client.peerHasClosed() else { return false }
            try? await send.finish()
            return true
        }

        // Box to client, until the box's side ends.
        var failure: BridgeFailure?
        while true {
            let data: Data
            do {
                data = try await recv.read(sizeLimit: UInt32(chunk))
            } catch {
                if !answer.started { failure = streamFailure(error, connection) }
                break
            }
            if data.isEmpty { break }
            answer.start()
            guard await client.write(Array(data)) else {
                // The client has gone: the rest of the answer is not wanted.
                try? await recv.stop(errorCode: 0)
                break
            }
        }
        if let failure {
            await answerFailure(client, failure)
        }
        client.close()
        // Only now, with the answer read and the client closed, the send side ends (the
        // upload stops at the closed client; a write the box no longer takes fails).
        Task {
            if await upload.value { return }
            try? await send.finish()
        }
    }

    /// Writes the bridge's own answer for a request that never reached the box, and says so
    /// on stdout.
    private static func answerFailure(_ client: ClientSocket, _ error: BridgeFailure) async {
        Output.event([("event", .string("failed")), ("error", .string(error.code.rawValue)),
                      ("message", .string(error.message))])
        _ = await client.write(badGateway(error))
    }

    static func badGateway(_ error: BridgeFailure) -> [UInt8] {
        let body = "{\"iroh_error\":\(jsonString(error.code.rawValue)),\"message\":\(jsonString(error.message))}"
        let head = "HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\n"
            + "X-Ariata-Iroh-Error: \(error.code.rawValue)\r\nConnection: close\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n"
        return Array((head + body).utf8)
    }

    /// Why a stream failed before any of the answer came: the connection's end if it has
    /// ended (not allowlisted, or lost), else the stream's own failure.
    private static func streamFailure(_ error: any Error, _ connection: Connection) -> BridgeFailure {
        if let reason = connection.closeReason() {
            return classifyClose(reason, connecting: false)
        }
        let text = describe(error)
        if isNotAllowlisted(text) { return classifyClose(text, connecting: false) }
        return BridgeFailure(.connectionFailed, "the stream to the box failed: \(text)")
    }
}

/// Whether any of the box's answer has gone to the client (the upload reads it from
/// another task).
final class AnswerProgress: Sendable {
    private let begun = Mutex(false)
    var started: Bool { begun.withLock { $0 } }
    func start() { begun.withLock { $0 = true } }
}
