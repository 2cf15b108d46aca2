import AgentCore
import Foundation

/// The audio chunk length that fits the server: 300 s on Virtues (one paid transcription
/// call per chunk; its own app sends 300 s), 30 s on Ariata, written to the configuration
/// with the reason in one line. A `chunk_seconds` the file already sets wins
/// (docs/streams/microphone.md, "Chunk length per server").
struct ChunkLengthStep {
    let identity: ServerIdentity?
    let console: Console

    func run(_ microphone: inout MicrophoneConfig) {
        guard microphone.enabled else { return }
        let server = identity ?? ServerIdentity(generation: nil)
        let (proposed, reason) = (server.proposedChunkSeconds, server.chunkReason)
        if microphone.chunkSecondsIsExplicit {
            guard microphone.chunkSeconds != proposed else {
                console.line("  audio in \(proposed) s chunks: \(reason)")
                return
            }
            console.line("  audio in \(microphone.chunkSeconds) s chunks, as the configuration sets ([microphone] chunk_seconds); "
                         + "for this server \(proposed) s would fit (\(reason)): remove chunk_seconds and run onboard again to take it")
            return
        }
        guard proposed > microphone.overlapSeconds else { return }
        microphone.chunkSeconds = proposed
        console.line("  audio in \(proposed) s chunks: \(reason) ([microphone] chunk_seconds)")
    }
}
