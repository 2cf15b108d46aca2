import AgentCore
import Foundation

/// Is gpsd there? Connects to it and reads the VERSION banner every gpsd sends first.
struct GPSDProbe {
    let host: String
    let port: Int
    let timeout: TimeInterval

    func check() -> DeviceCheck {
        let name = "gpsd at \(host):\(port)"
        switch banner() {
        case .success(let text) where text.contains("\"class\":\"VERSION\""):
            let release = text.range(of: "\"release\":\"").map { r in
                String(text[r.upperBound...].prefix { $0 != "\"" })
            } ?? "?"
            return DeviceCheck(name: name, stream: .location, outcome: .ok, detail: "gpsd \(release) answers")
        case .success:
            return DeviceCheck(name: name, stream: .location, outcome: .failed,
                               detail: "something answers on that port but it is not gpsd",
                               fix: "set [location] gpsd_host and gpsd_port to where gpsd listens")
        case .failure(let reason):
            return DeviceCheck(name: name, stream: .location, outcome: .failed, detail: "cannot reach gpsd: \(reason)",
                               fix: "sudo apt install gpsd && sudo systemctl enable --now gpsd.socket (and set the GPS device in /etc/default/gpsd)")
        }
    }

    private func banner() -> Result<String, ProbeFailure> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            return .failure(ProbeFailure("cannot resolve \(host): \(String(cString: gai_strerror(rc)))"))
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            defer { entry = info.pointee.ai_next }
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
                lastError = String(cString: strerror(errno))
                continue
            }
            var buffer = [UInt8](repeating: 0, count: 1024)
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else {
                return .failure(ProbeFailure(n == 0 ? "it closed the connection" : "no answer within \(Int(timeout)) s"))
            }
            return .success(String(decoding: buffer[0..<n], as: UTF8.self))
        }
        return .failure(ProbeFailure(lastError.lowercased()))
    }
}

struct ProbeFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
