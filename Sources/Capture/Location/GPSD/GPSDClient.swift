import CGPS
import Foundation
import Platform
import Synchronization

/// What one message from gpsd meant to us.
enum GPSDReport: Sendable, Equatable {
    /// A TPV report: a fix, or nil when gpsd says there is none (mode below 2D, or no time).
    case position(LocationFix?)
    /// A SKY report's count of satellites used in the solution (nil when unknown).
    case satellites(used: Int?)
    /// The VERSION banner gpsd sends first on every connection: its release.
    case version(release: String)
    /// The DEVICES list gpsd sends after a WATCH: how many receivers it has.
    case devices(count: Int)
}

/// What answered on gpsd's port, as the device check asks it.
public enum GPSDGreeting: Sendable, Equatable {
    /// gpsd, with its release.
    case gpsd(release: String)
    /// Lines came, but the first was not gpsd's VERSION: another program listens there.
    case notGPSD
    /// Nothing came within the time.
    case silent
}

/// One connection to gpsd through libgps (GPSD API 11): `gps_open`, a JSON watch, and
/// `gps_read` line by line. libgps does the JSON parsing; this type turns its
/// `gps_data_t` into `GPSDReport`s. The location stream's reader and the device check
/// (`greeting`) both connect through it, so the check and the stream cannot disagree.
public final class GPSDClient: @unchecked Sendable {
    // @unchecked: not thread-safe; one thread uses it at a time (the one that connected
    // hands it to the one that reads, see `connect(host:port:timeout:)`).
    let endpoint: String
    let fileDescriptor: Int32
    private let data: UnsafeMutablePointer<gps_data_t>
    private var open = true
    /// The latest SKY count on this connection. With NMEA receivers gpsd sends SKY before
    /// the TPV of the same epoch, so the TPV takes the count last seen.
    private var satellitesUsed: Int?

    /// A stream of messages that never ends would keep `drain` from returning to the
    /// poll that watches for `stop()`; this bounds one drain.
    static let maxLinesPerDrain = 512

    /// Connects and asks gpsd to stream JSON reports. Blocks for the TCP connect only.
    init(host: String, port: Int) throws(GPSDError) {
        let endpoint = "\(host):\(port)"
        self.endpoint = endpoint
        let raw = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<gps_data_t>.size,
                                                   alignment: MemoryLayout<gps_data_t>.alignment)
        memset(raw, 0, MemoryLayout<gps_data_t>.size)
        data = raw.bindMemory(to: gps_data_t.self, capacity: 1)

        errno = 0
        if gps_open(host, String(port), data) != 0 {
            let code = errno
            data.deallocate()
            throw GPSDError.openFailure(code: code, host: host, endpoint: endpoint)
        }
        fileDescriptor = data.pointee.gps_fd

        if gps_stream(data, UInt32(WATCH_ENABLE | WATCH_JSON), nil) != 0 {
            let detail = String(cString: strerror(errno))
            // Fully initialised by now, so deinit runs after the throw: close() once here
            // and it is a no-op there.
            close()
            throw GPSDError.watchFailed(endpoint: endpoint, detail: detail)
        }
        // Non-blocking after the WATCH is written: gps_read then returns 0 on a partial
        // line instead of blocking in recv, so a peer that stalls mid-line cannot hold
        // the reader thread (and with it stop()).
        let flags = fcntl(fileDescriptor, F_GETFL)
        _ = fcntl(fileDescriptor, F_SETFL, flags | O_NONBLOCK)
    }

    deinit { close() }

    /// Connects as the stream does, within `timeout` seconds for the connect and again for
    /// gpsd's VERSION banner, and says what answered. Throws what the stream would meet.
    public static func greeting(host: String, port: Int, timeout: TimeInterval) throws(GPSDError) -> GPSDGreeting {
        let client = try connect(host: host, port: port, timeout: timeout)
        defer { client.close() }
        return try client.awaitVersion(timeout: timeout)
    }

    /// How many receivers gpsd has (its DEVICES answer to the watch), nil when it did not
    /// say within `timeout`. gpsd that answers with none (socket-activated with nothing
    /// plugged in, as on a laptop) has no fixes to give.
    public static func receiverCount(host: String, port: Int, timeout: TimeInterval) throws(GPSDError) -> Int? {
        let client = try connect(host: host, port: port, timeout: timeout)
        defer { client.close() }
        let deadline = Monotonic.now + timeout
        while true {
            var count: Int?
            try client.drain { report in
                if case .devices(let n) = report { count = n }
            }
            if let count { return count }
            let remaining = deadline - Monotonic.now
            guard remaining > 0, let ready = Poll.wait([client.fileDescriptor], timeout: remaining), ready[0] != 0 else { return nil }
        }
    }

    /// Connects like `init` but gives up after `timeout`. gps_open's TCP connect has no
    /// time limit of its own (a remote host that does not answer holds it for minutes), so
    /// it runs on a thread of its own, which is left to finish, and to close what it
    /// opened, when the time is up.
    static func connect(host: String, port: Int, timeout: TimeInterval) throws(GPSDError) -> GPSDClient {
        let endpoint = "\(host):\(port)"
        let outcome = Mutex<Result<GPSDClient, GPSDError>?>(nil)
        let thread: NamedThread
        do {
            thread = try NamedThread(name: "ariata-gpsdconn") { _ in
                let result = Result { () throws(GPSDError) in try GPSDClient(host: host, port: port) }
                outcome.withLock { $0 = result }
            }
        } catch {
            throw .unreachable(endpoint: endpoint, detail: "cannot start a thread to connect: \(error)")
        }
        guard thread.join(timeout: timeout), let result = outcome.withLock({ $0.take() }) else {
            throw .unreachable(endpoint: endpoint, detail: "no connection within \(Int(timeout.rounded(.up))) s")
        }
        return try result.get()
    }

    /// Waits up to `timeout` seconds for the first line: gpsd's VERSION, or not gpsd.
    func awaitVersion(timeout: TimeInterval) throws(GPSDError) -> GPSDGreeting {
        let deadline = Monotonic.now + timeout
        while true {
            var greeting: GPSDGreeting?
            let lines = try drain { report in
                if greeting == nil, case .version(let release) = report { greeting = .gpsd(release: release) }
            }
            if let greeting { return greeting }
            if lines > 0 { return .notGPSD }
            let remaining = deadline - Monotonic.now
            guard remaining > 0, Poll.wait([fileDescriptor], timeout: remaining) != nil else { return .silent }
        }
    }

    func close() {
        guard open else { return }
        open = false
        gps_close(data)
        data.deallocate()
    }

    /// Reads every complete line libgps can get without blocking and hands each report on.
    /// Returns the number of lines read; throws when the connection is gone.
    @discardableResult
    func drain(_ handle: (GPSDReport) -> Void) throws(GPSDError) -> Int {
        var lines = 0
        while lines < Self.maxLinesPerDrain {
            // `set` otherwise keeps bits from earlier messages; cleared, it says what this
            // one line carried.
            data.pointee.set = 0
            errno = 0
            let status = gps_read(data, nil, 0)
            if status < 0 {
                let detail = errno == 0
                    ? "connection closed (or a line longer than libgps accepts)"
                    : String(cString: strerror(errno))
                throw GPSDError.lost(endpoint: endpoint, detail: detail)
            }
            if status == 0 { break }
            lines += 1
            if let report = interpret() { handle(report) }
        }
        return lines
    }

    private func interpret() -> GPSDReport? {
        let set = data.pointee.set
        if set & GPSDMask.version != 0 {
            let release = withUnsafeBytes(of: data.pointee.version.release) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            return .version(release: release)
        }
        if set & GPSDMask.deviceList != 0 {
            return .devices(count: Int(data.pointee.devices.ndevices))
        }
        if set & GPSDMask.satellite != 0 {
            let used = Int(data.pointee.satellites_used)
            // gps.h: the count is only meaningful when positive.
            satellitesUsed = used > 0 ? used : nil
            return .satellites(used: satellitesUsed)
        }
        if set & GPSDMask.mode != 0 {
            return .position(LocationFix(reported: data.pointee.fix, set: set, satellitesUsed: satellitesUsed))
        }
        return nil
    }
}

/// The `*_SET` bits of gps.h that are used here (written out because Swift does not
/// import shifted 64-bit macros reliably).
enum GPSDMask {
    static let time: UInt64 = 1 << 2
    static let mode: UInt64 = 1 << 10
    static let satellite: UInt64 = 1 << 15
    static let deviceList: UInt64 = 1 << 20
    static let version: UInt64 = 1 << 28
}

extension LocationFix {
    /// A fix from gpsd's TPV data, or nil when it is not one: mode below 2D, no time, or
    /// a position that is not a position. NaN fields become nil.
    init?(reported fix: gps_fix_t, set: UInt64, satellitesUsed: Int?) {
        let mode = Int(fix.mode)
        guard mode >= Int(MODE_2D) else { return nil }
        guard set & GPSDMask.time != 0, fix.time.tv_sec > 0 else { return nil }
        guard let latitude = finite(fix.latitude), (-90.0...90.0).contains(latitude),
              let longitude = finite(fix.longitude), (-180.0...180.0).contains(longitude)
        else { return nil }
        let is3D = mode >= Int(MODE_3D)
        self.init(
            mode: is3D ? 3 : 2,
            time: FixTime(seconds: Int(fix.time.tv_sec), nanoseconds: Int(fix.time.tv_nsec)),
            latitude: latitude,
            longitude: longitude,
            altitude: is3D ? finite(fix.altMSL) : nil,
            speed: finite(fix.speed).flatMap { $0 >= 0 ? $0 : nil },
            course: finite(fix.track).flatMap { (0.0...360.0).contains($0) ? $0 : nil },
            horizontalAccuracy: finite(fix.eph).flatMap { $0 >= 0 ? $0 : nil },
            verticalAccuracy: is3D ? finite(fix.epv).flatMap { $0 >= 0 ? $0 : nil } : nil,
            satellitesUsed: satellitesUsed,
            source: .gpsd
        )
    }
}

private func finite(_ value: Double) -> Double? {
    value.isFinite ? value : nil
}
