import AgentCore
@testable import Capture
import Foundation
import Logging
import TestRigs

/// A location stream writing into a real SQLite queue in a temporary directory, with its
/// log kept for inspection.
final class LocationFixture {
    let directory: TemporaryDirectory
    let database: AgentDatabase
    let log = RecordingLogHandler.Store()
    let stream: LocationStream

    /// - Parameter configure: changes to the configuration (the source is gpsd unless it
    ///   says otherwise: the gpsd tests must not fall back to GeoClue).
    init(port: Int, interval: Int = 1, tuning: LocationTuning = LocationTuning(), serviceMode: ServiceMode = .system,
         configure: (inout LocationConfig) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory("ariata-location")
        database = try AgentDatabase(path: directory.file("queue.sqlite"))
        var config = LocationConfig()
        // 127.0.0.1 rather than localhost: no name lookup, and the endpoint named in
        // health reasons is exactly what the tests expect.
        config.gpsdHost = "127.0.0.1"
        config.gpsdPort = port
        config.interval = interval
        config.source = .gpsd
        configure(&config)
        let store = log
        var logger = Logger(label: "ariata.location") { _ in RecordingLogHandler(store: store) }
        logger.logLevel = .debug
        stream = LocationStream(config: config, queue: database.recordQueue, logger: logger, tuning: tuning,
                                serviceMode: serviceMode)
    }

    deinit { stream.stop() }

    /// The location records in the queue, oldest first, as the JSON objects that will be sent.
    func records() throws -> [[String: Any]] {
        try database.recordQueue.records(stream: .location).map { record in
            guard let object = try JSONSerialization.jsonObject(with: record.payload) as? [String: Any] else {
                throw RigFailure("a location payload is not a JSON object: \(String(decoding: record.payload, as: UTF8.self))")
            }
            return object
        }
    }

    func recordTimestamps() throws -> [String] {
        try records().compactMap { $0["timestamp"] as? String }
    }

    func waitUntilConnected(timeout: TimeInterval = 20) throws {
        try waitUntil("the location stream to connect to gpsd", timeout: timeout) { stream.status().connected }
    }
}
