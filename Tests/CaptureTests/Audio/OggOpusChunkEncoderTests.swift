import Capture
import Foundation
import TestRigs
import XCTest

final class OggOpusChunkEncoderTests: XCTestCase {
    func testAChunkIsAStandaloneOggOpusFileOfExactlyItsSamples() throws {
        let directory = try TemporaryDirectory()
        let input = try SpeechInput.samples(ofRawFile: try SpeechInput.make(seconds: 7, in: directory.path))
        let samples = Array(input.prefix(7 * 16_000 + 123)) // not a whole number of frames
        let encoder = try OggOpusChunkEncoder(.init(bitrate: 16_000))
        try samples.withUnsafeBufferPointer { try encoder.append($0) }
        let data = try encoder.finish()

        // RFC 7845: first page holds OpusHead (BOS), second OpusTags, the last has EOS.
        XCTAssertEqual(data.prefix(4), Data("OggS".utf8))
        XCTAssertEqual(data[data.startIndex + 5] & 0x02, 0x02, "the first page begins the stream")
        XCTAssertEqual(data[data.startIndex + 28 ..< data.startIndex + 36], Data("OpusHead".utf8))
        let preSkip = UInt16(data[data.startIndex + 38]) | UInt16(data[data.startIndex + 39]) << 8
        XCTAssertGreaterThan(preSkip, 0, "the encoder's look-ahead is declared as pre-skip")
        XCTAssertNotNil(data.range(of: Data("OpusTags".utf8)))
        let lastPage = try XCTUnwrap(data.range(of: Data("OggS".utf8), options: .backwards))
        XCTAssertEqual(data[lastPage.lowerBound + 5] & 0x04, 0x04, "the last page ends the stream")

        let info = try OpusTools.info(data, in: directory)
        XCTAssertTrue(info.contains("Original sample rate: 16000 Hz"), info)
        XCTAssertTrue(info.contains("Packet duration:   20.0ms (max),   20.0ms (avg),   20.0ms (min)"), info)
        let decoded = try OpusTools.decode(data, in: directory)
        XCTAssertEqual(decoded.count, samples.count, "granule positions trim pre-skip and padding exactly")
        XCTAssertGreaterThan(OpusTools.correlation(decoded[16_000 ..< 96_000], samples[16_000 ..< 96_000]), 0.5)
    }

    func testFinishTwiceIsAnError() throws {
        let encoder = try OggOpusChunkEncoder(.init())
        try [Int16](repeating: 100, count: 1_000).withUnsafeBufferPointer { try encoder.append($0) }
        _ = try encoder.finish()
        XCTAssertThrowsError(try encoder.finish())
    }

    func testAnEmptyChunkIsAnErrorNotACrash() throws {
        let encoder = try OggOpusChunkEncoder(.init())
        XCTAssertThrowsError(try encoder.finish())
    }
}
