import Foundation

public enum FreePort {
    /// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, closed).
    public static func find() throws -> Int {
        try LoopbackSocket().port
    }
}
