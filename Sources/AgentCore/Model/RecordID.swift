import Foundation

/// New record ids: version 7 UUIDs (RFC 9562, section 5.7), 48 bits of Unix milliseconds
/// followed by 74 random bits.
///
/// The queue keeps a unique index on record ids. With random (version 4) ids every insert
/// lands on a random page of that index, and the WAL checkpoint then writes one more page
/// to the card per record; ids that grow with time all land on the index's last page
/// (docs/queue.md). The time part only orders: a clock that is wrong makes ids no less unique
/// (74 random bits), and the ingest contract asks only for a UUID.
public enum RecordID {
    public static func make(at time: Date = Date()) -> UUID {
        var generator = SystemRandomNumberGenerator()
        return make(at: time, using: &generator)
    }

    public static func make(at time: Date, using generator: inout some RandomNumberGenerator) -> UUID {
        let seconds = time.timeIntervalSince1970
        let millis = seconds.isFinite && seconds > 0 ? UInt64(min(seconds * 1_000, Double(UInt64(1) << 48 - 1))) : 0
        let random = (generator.next() as UInt64, generator.next() as UInt64)
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: millis >> (8 * (5 - index))) }
        for index in 6..<16 {
            let source = index < 14 ? random.0 >> (8 * (index - 6)) : random.1 >> (8 * (index - 14))
            bytes[index] = UInt8(truncatingIfNeeded: source)
        }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)   // version 7
        bytes[8] = 0x80 | (bytes[8] & 0x3F)   // variant 10
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
