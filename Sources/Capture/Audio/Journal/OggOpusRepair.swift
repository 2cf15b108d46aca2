import COgg
import Foundation

/// Closes an Ogg Opus file that was cut off (a journal whose writer was killed) into a
/// valid, playable file, with libogg doing the framing: only complete pages of the one
/// stream, in sequence, are kept (`ogg_sync_pageout` never returns a torn page); the last
/// one gets the end-of-stream flag and its CRC is computed again (`ogg_page_checksum_set`).
///
/// The duration is what the pages say: the last granule position minus the pre-skip of
/// OpusHead, in 48 kHz units (RFC 7845), which is exactly what a decoder plays.
public enum OggOpusRepair {
    public struct Repaired: Sendable, Equatable {
        public var data: Data
        /// Playable samples at 48 kHz: last granule position minus pre-skip.
        public var samples48k: Int64
        /// Whether the file had to be changed (false: it was already complete).
        public var wasCut: Bool

        public var duration: TimeInterval { Double(samples48k) / 48_000 }
    }

    private struct Page {
        var header: [UInt8]
        var body: [UInt8]
        var granule: Int64
        var isEndOfStream: Bool
    }

    /// nil when the bytes hold no audio page (cut before the first one, or not Ogg Opus).
    public static func repair(_ data: Data) -> Repaired? {
        let pages = completePages(of: data)
        guard pages.count >= 3,
              pages[0].body.starts(with: Array("OpusHead".utf8)), pages[0].body.count >= 19,
              pages[1].body.starts(with: Array("OpusTags".utf8)) else { return nil }
        let preSkip = Int64(pages[0].body[10]) | Int64(pages[0].body[11]) << 8
        var kept = pages
        // A page on which no packet ends has granule position -1: it holds only the start
        // of a packet whose end was cut off, so it plays nothing.
        while kept.count > 2, let last = kept.last, last.granule < 0 { kept.removeLast() }
        guard kept.count > 2, let last = kept.last, last.granule - preSkip > 0 else { return nil }
        let wasCut = !last.isEndOfStream || kept.count != pages.count
        if !last.isEndOfStream {
            kept[kept.count - 1] = endingStream(last)
        }
        var output = Data(capacity: kept.reduce(0) { $0 + $1.header.count + $1.body.count })
        for page in kept {
            output.append(contentsOf: page.header)
            output.append(contentsOf: page.body)
        }
        return Repaired(data: output, samples48k: last.granule - preSkip, wasCut: wasCut)
    }

    /// The complete pages of the first logical stream, from its first page, while their
    /// sequence numbers follow on; stops at the first gap, garbage or end-of-stream.
    private static func completePages(of data: Data) -> [Page] {
        var sync = ogg_sync_state()
        ogg_sync_init(&sync)
        defer { ogg_sync_clear(&sync) }
        guard !data.isEmpty, let buffer = ogg_sync_buffer(&sync, data.count) else { return [] }
        data.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress { buffer.update(from: base.assumingMemoryBound(to: CChar.self), count: bytes.count) }
        }
        guard ogg_sync_wrote(&sync, data.count) == 0 else { return [] }

        var pages: [Page] = []
        var serial: Int32 = 0
        var page = ogg_page()
        while ogg_sync_pageout(&sync, &page) == 1 {
            if pages.isEmpty {
                guard ogg_page_bos(&page) != 0 else { break }
                serial = ogg_page_serialno(&page)
            }
            guard ogg_page_serialno(&page) == serial, ogg_page_pageno(&page) == pages.count else { break }
            pages.append(Page(header: Array(UnsafeBufferPointer(start: page.header, count: page.header_len)),
                              body: Array(UnsafeBufferPointer(start: page.body, count: page.body_len)),
                              granule: ogg_page_granulepos(&page),
                              isEndOfStream: ogg_page_eos(&page) != 0))
            if pages[pages.count - 1].isEndOfStream { break }
        }
        // ogg_sync_pageout returns 0 for a torn last page (it waits for bytes that never
        // come) and -1 for bytes that are no page; either way what follows is not kept.
        return pages
    }

    /// The same page flagged end-of-stream, with its CRC computed again by libogg.
    private static func endingStream(_ page: Page) -> Page {
        var ending = page
        // Byte 5 of the page header holds the flags; 0x04 is end-of-stream (RFC 3533).
        ending.header[5] |= 0x04
        ending.header.withUnsafeMutableBufferPointer { header in
            ending.body.withUnsafeMutableBufferPointer { body in
                var raw = ogg_page(header: header.baseAddress, header_len: header.count,
                                   body: body.baseAddress, body_len: body.count)
                ogg_page_checksum_set(&raw)
            }
        }
        ending.isEndOfStream = true
        return ending
    }
}
