import CZlib
import Foundation

/// A PNG read into RGBA pixels, for tests that check what a real renderer drew (the
/// coverage SVG through `rsvg-convert`): 8-bit RGB or RGBA, not interlaced, which is what
/// rsvg-convert and most encoders write. Anything else is refused with what it is.
public struct PNGImage {
    public let width: Int
    public let height: Int
    /// Row-major RGBA, 4 bytes a pixel.
    public let pixels: [UInt8]

    public struct Unsupported: Error, CustomStringConvertible {
        public let description: String
    }

    public init(contentsOf path: String) throws {
        try self.init(data: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    public init(data: Data) throws {
        let bytes = [UInt8](data)
        guard bytes.count > 8, bytes.prefix(8) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] else {
            throw Unsupported(description: "not a PNG file")
        }
        func be32(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        var offset = 8, width = 0, height = 0, channels = 0
        var compressed: [UInt8] = []
        while offset + 8 <= bytes.count {
            let length = be32(offset)
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            let body = offset + 8
            guard body + length <= bytes.count else { throw Unsupported(description: "a truncated \(type) chunk") }
            switch type {
            case "IHDR":
                width = be32(body)
                height = be32(body + 4)
                let depth = bytes[body + 8], colour = bytes[body + 9], interlace = bytes[body + 12]
                guard depth == 8, colour == 2 || colour == 6, interlace == 0 else {
                    throw Unsupported(description: "bit depth \(depth), colour type \(colour), interlace \(interlace): only 8-bit RGB(A), not interlaced")
                }
                channels = colour == 6 ? 4 : 3
            case "IDAT":
                compressed += bytes[body..<body + length]
            default:
                break
            }
            offset = body + length + 4
        }
        guard width > 0, height > 0, channels > 0 else { throw Unsupported(description: "no IHDR chunk") }
        let stride = width * channels
        let raw = try Self.inflate(compressed, expected: (stride + 1) * height)
        var out = [UInt8](repeating: 0, count: width * height * 4)
        var previous = [UInt8](repeating: 0, count: stride)
        for y in 0..<height {
            let start = y * (stride + 1)
            let filter = raw[start]
            var line = Array(raw[start + 1..<start + 1 + stride])
            for i in 0..<stride {
                let a = i >= channels ? Int(line[i - channels]) : 0, b = Int(previous[i]), c = i >= channels ? Int(previous[i - channels]) : 0
                let predictor: Int
                switch filter {
                case 0: predictor = 0
                case 1: predictor = a
                case 2: predictor = b
                case 3: predictor = (a + b) / 2
                case 4:
                    let p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c)
                    predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c
                default: throw Unsupported(description: "filter type \(filter) on row \(y)")
                }
                line[i] = UInt8((Int(line[i]) + predictor) & 0xFF)
            }
            for x in 0..<width {
                for k in 0..<4 {
                    out[(y * width + x) * 4 + k] = k < channels ? line[x * channels + k] : 255
                }
            }
            previous = line
        }
        self.width = width
        self.height = height
        pixels = out
    }

    /// The pixel at (x, y) as RGBA.
    public func pixel(_ x: Int, _ y: Int) -> (r: UInt8, g: UInt8, b: UInt8, a: UInt8) {
        let i = (y * width + x) * 4
        return (pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3])
    }

    /// The pixel at (x, y) as "#rrggbb".
    public func hex(_ x: Int, _ y: Int) -> String {
        let p = pixel(x, y)
        return String(format: "#%02x%02x%02x", p.r, p.g, p.b)
    }

    private static func inflate(_ input: [UInt8], expected: Int) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: expected)
        var destinationLength = uLongf(expected)
        let result = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                uncompress(destination.baseAddress, &destinationLength, source.baseAddress, uLong(input.count))
            }
        }
        guard result == Z_OK, Int(destinationLength) == expected else {
            throw Unsupported(description: "zlib could not inflate the image data (\(result), \(destinationLength) of \(expected) bytes)")
        }
        return output
    }
}
