/// One notification of the Heart Rate Measurement characteristic (GATT 0x2A37), as the
/// Bluetooth SIG's Heart Rate Service 1.0 lays it out: a flags byte, the heart rate (8 or
/// 16 bit), the energy expended (16 bit kJ) when flagged, then RR intervals (16 bit, in
/// 1/1024 s) to the end. Little-endian throughout (docs/streams/health.md#bluetooth-le-sensors).
public struct HeartRateMeasurement: Sendable, Equatable {
    /// The flags byte's sensor-contact bits (bit 1 detected, bit 2 supported).
    public enum Contact: Sendable, Equatable {
        /// The sensor cannot tell (bit 2 clear): its readings are taken as worn.
        case notSupported
        case notDetected
        case detected
    }

    /// Beats per minute as the sensor computed it.
    public var heartRate: Int
    public var contact: Contact
    /// Kilojoules since the sensor's counter was last reset, when the sensor sends it.
    public var energyExpended: Int?
    /// Beat-to-beat intervals in the sensor's 1/1024 s, oldest first.
    public var rrIntervals: [UInt16]

    public init(heartRate: Int, contact: Contact = .notSupported, energyExpended: Int? = nil, rrIntervals: [UInt16] = []) {
        self.heartRate = heartRate
        self.contact = contact
        self.energyExpended = energyExpended
        self.rrIntervals = rrIntervals
    }

    /// The RR intervals in milliseconds.
    public var rrMilliseconds: [Double] { rrIntervals.map { Double($0) * 1000 / 1024 } }

    /// A notification that cannot be a measurement.
    public struct Malformed: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Reads a notification's bytes. A trailing odd byte after the RR intervals is
    /// refused rather than guessed at.
    public init(bytes: [UInt8]) throws(Malformed) {
        guard let flags = bytes.first else { throw Malformed(description: "an empty heart rate measurement") }
        var index = 1
        func uint16(_ what: String) throws(Malformed) -> UInt16 {
            guard index + 1 < bytes.count else {
                throw Malformed(description: "heart rate measurement of \(bytes.count) bytes ends inside its \(what)")
            }
            defer { index += 2 }
            return UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
        }
        if flags & 0x01 != 0 {
            heartRate = Int(try uint16("16-bit heart rate"))
        } else {
            guard index < bytes.count else { throw Malformed(description: "heart rate measurement without its heart rate") }
            heartRate = Int(bytes[index])
            index += 1
        }
        switch flags & 0x06 {
        case 0x06: contact = .detected
        case 0x04: contact = .notDetected
        default: contact = .notSupported
        }
        energyExpended = flags & 0x08 != 0 ? Int(try uint16("energy expended")) : nil
        var intervals: [UInt16] = []
        if flags & 0x10 != 0 {
            guard (bytes.count - index) % 2 == 0 else {
                throw Malformed(description: "heart rate measurement has an odd byte among its RR intervals")
            }
            while index < bytes.count { intervals.append(try uint16("RR interval")) }
        }
        rrIntervals = intervals
    }

    /// The notification's bytes (the inverse of `init(bytes:)`, for the tests' mock sensor). An 8-bit heart rate unless it does not fit or `wide`.
    public func bytes(wide: Bool = false) -> [UInt8] {
        let sixteen = wide || heartRate > 255
        var flags: UInt8 = sixteen ? 0x01 : 0
        switch contact {
        case .notSupported: break
        case .notDetected: flags |= 0x04
        case .detected: flags |= 0x06
        }
        if energyExpended != nil { flags |= 0x08 }
        if !rrIntervals.isEmpty { flags |= 0x10 }
        var out: [UInt8] = [flags]
        func append(_ v: Int) { out.append(UInt8(v & 0xFF)); out.append(UInt8((v >> 8) & 0xFF)) }
        if sixteen { append(heartRate) } else { out.append(UInt8(heartRate & 0xFF)) }
        if let energyExpended { append(energyExpended) }
        for rr in rrIntervals { append(Int(rr)) }
        return out
    }
}
