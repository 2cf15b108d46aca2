import CZlib
import Foundation

/// gzip (RFC 1952) of a request body, through the system zlib that libcurl links.
/// libcurl decompresses answers but never compresses what it sends.
enum Gzip {
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        var description: String { "zlib failed to compress the body (error \(code))" }
    }

    /// The body's pieces compressed as one stream, in order.
    static func compress(_ input: RequestBody, level: Int32 = 6) throws -> Data {
        var stream = z_stream()
        let initialised = ariata_deflate_init_gzip(&stream, level)
        guard initialised == Z_OK else { throw Failure(code: initialised) }
        defer { deflateEnd(&stream) }

        // deflateBound of the whole is room for everything: no call runs out of output.
        var output = Data(count: Int(deflateBound(&stream, uLong(input.count))))
        let capacity = output.count
        var result = Z_OK
        output.withUnsafeMutableBytes { outRaw in
            stream.next_out = outRaw.bindMemory(to: Bytef.self).baseAddress
            stream.avail_out = uInt(capacity)
            for piece in input.pieces where result == Z_OK {
                result = piece.withUnsafeBytes { inRaw in
                    // zlib's next_in is not const in this header; it never writes through it.
                    stream.next_in = UnsafeMutablePointer(mutating: inRaw.bindMemory(to: Bytef.self).baseAddress)
                    stream.avail_in = uInt(inRaw.count)
                    return deflate(&stream, Z_NO_FLUSH)
                }
            }
            if result == Z_OK {
                stream.next_in = nil
                stream.avail_in = 0
                result = deflate(&stream, Z_FINISH)
            }
        }
        guard result == Z_STREAM_END else { throw Failure(code: result) }
        output.count = Int(stream.total_out)
        return output
    }
}
