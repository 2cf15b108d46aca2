import CZlib
import Foundation

/// gzip (RFC 1952) of a request body, through the system zlib that libcurl links.
/// libcurl decompresses answers but never compresses what it sends.
enum Gzip {
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        var description: String { "zlib failed to compress the body (error \(code))" }
    }

    static func compress(_ input: Data, level: Int32 = 6) throws -> Data {
        var stream = z_stream()
        let initialised = ariata_deflate_init_gzip(&stream, level)
        guard initialised == Z_OK else { throw Failure(code: initialised) }
        defer { deflateEnd(&stream) }

        var output = Data(count: Int(deflateBound(&stream, uLong(input.count))))
        let capacity = output.count
        let result: Int32 = input.withUnsafeBytes { inRaw in
            output.withUnsafeMutableBytes { outRaw in
                // zlib's next_in is not const in this header; it never writes through it.
                stream.next_in = UnsafeMutablePointer(mutating: inRaw.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(inRaw.count)
                stream.next_out = outRaw.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(capacity)
                return deflate(&stream, Z_FINISH)
            }
        }
        // deflateBound guarantees room for everything in one Z_FINISH call.
        guard result == Z_STREAM_END else { throw Failure(code: result) }
        output.count = Int(stream.total_out)
        return output
    }
}
