import Foundation
import Rigs

/// A Wi-Fi locator of the test's own on 127.0.0.1: a real HTTP server speaking the
/// Mozilla/BeaconDB geolocate API that GeoClue's Wi-Fi source posts to (`[wifi] url`).
/// It answers every POST with the answer set now (`answer(_:)`), and counts the requests
/// and keeps their bodies, so a test sees what GeoClue sent (`{}` is a pure IP lookup).
public final class GeoLocatorRig: @unchecked Sendable {
    public enum Answer: Sendable {
        /// `{"location":{"lat":…,"lng":…},"accuracy":…}`, with `"fallback"` when given
        /// (BeaconDB's and MLS's "ipf": answered from the IP address).
        case position(latitude: Double, longitude: Double, accuracy: Double, fallback: String? = nil)
        /// 404 `{"error":{"code":404,"message":"Not found"}}`: the locator knows nothing here.
        case notFound
    }

    public let port: Int
    private let directory: TemporaryDirectory
    private let server: ChildProcess

    public var url: String { "http://127.0.0.1:\(port)/v1/geolocate" }

    public init(answer: Answer) throws {
        directory = try TemporaryDirectory("geolocator")
        port = try FreePort.find()
        let answerFile = directory.file("answer.json")
        try Self.write(answer, to: answerFile)
        server = try ChildProcess("/usr/bin/python3", ["-c", Self.script, String(port), answerFile, directory.file("requests")],
                                  name: "geolocator", logDirectory: directory.path)
        try waitUntil("the locator on 127.0.0.1:\(port)", timeout: 10) {
            guard server.isRunning else { throw RigFailure("the locator exited: \(server.stderr())") }
            return FileManager.default.fileExists(atPath: directory.file("ready"))
        }
    }

    /// What the next requests get.
    public func answer(_ answer: Answer) throws {
        try Self.write(answer, to: directory.file("answer.json"))
    }

    /// The request bodies so far, oldest first.
    public var requests: [String] {
        let text = (try? String(contentsOfFile: directory.file("requests"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    private static func write(_ answer: Answer, to path: String) throws {
        let object: [String: Any]
        switch answer {
        case .position(let latitude, let longitude, let accuracy, let fallback):
            var body: [String: Any] = ["location": ["lat": latitude, "lng": longitude], "accuracy": accuracy]
            if let fallback { body["fallback"] = fallback }
            object = ["status": 200, "body": body]
        case .notFound:
            object = ["status": 404, "body": ["error": ["code": 404, "message": "Not found"]]]
        }
        let temporary = path + ".new"
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else { throw RigFailure("cannot replace \(path)") }
    }

    /// Python's own HTTP server: one request at a time, the answer read from its file for
    /// each, the body appended to the requests file on one line.
    private static let script = #"""
    import http.server, json, os, sys
    port, answer_file, requests_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    class Locator(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with open(requests_file, "a") as f:
                f.write(body.decode("utf-8", "replace").replace("\n", " ") + "\n")
            with open(answer_file) as f:
                answer = json.load(f)
            data = json.dumps(answer["body"]).encode()
            self.send_response(answer["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        def log_message(self, *args):
            pass
    server = http.server.HTTPServer(("127.0.0.1", port), Locator)
    open(os.path.join(os.path.dirname(answer_file), "ready"), "w").close()
    server.serve_forever()
    """#
}
