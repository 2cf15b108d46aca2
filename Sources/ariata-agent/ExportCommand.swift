import AgentCore
import ArgumentParser
import Foundation
import Reports

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Writes your own data from the local queue in formats other tools open.",
        discussion: """
            Reads the records still on this device (pending ones, and uploaded ones that \\
            retention has not removed yet: [storage] retention_days), oldest capture first. \\
            It opens the queue read-only, so it runs beside the daemon without disturbing \\
            it and sees one consistent snapshot; nothing is changed or marked.

            STREAMS AND FORMATS
              location    --format gpx      GPX 1.1 track (map apps, GPS editors, gpsbabel)
                          --format geojson  GeoJSON FeatureCollection of points (GIS, web maps)
                          --format jsonl    one record per line, as the server receives it
              health      --format jsonl    one record per line
                          --format csv      RFC 4180, a column per field (id, timestamp, metric_type,
                                            value, unit first)
              microphone  --out DIR         one playable Ogg Opus file per chunk, named by
                                            its start in UTC: 2026-05-01T180000.000Z.opus

            Location and health go to standard output, or to the file --out names (made with \\
            mode 0600: it is personal data). The microphone needs --out DIR (made if missing).

            TIME for --since and --until is an RFC 3339 time (2026-05-01T18:00:00Z), a local \\
            date or date and time (2026-05-01, '2026-05-01 18:00'), or an age (7d, 12h). \\
            --since is inclusive, --until exclusive.

            EXAMPLES
              ariata-agent export --stream location --format gpx --since 2026-05-01 > day.gpx
              ariata-agent export --stream health --format csv --since 7d --out health.csv
              ariata-agent export --stream microphone --since 12h --out ~/audio
            """)

    @OptionGroup var options: ConfigOptions

    @Option(help: ArgumentHelp("location, health or microphone.", valueName: "stream"))
    var stream: String

    @Option(help: ArgumentHelp("location: gpx, geojson or jsonl (default gpx); health: jsonl or csv (default jsonl).", valueName: "format"))
    var format: String?

    @Option(help: ArgumentHelp("Only records captured at or after TIME.", valueName: "time"))
    var since: String?

    @Option(help: ArgumentHelp("Only records captured before TIME.", valueName: "time"))
    var until: String?

    @Option(help: ArgumentHelp("A file for location and health (default: standard output); a directory for the microphone (required).", valueName: "path"))
    var out: String?

    func validate() throws {
        guard let name = StreamName(rawValue: stream) else {
            throw ValidationError("unknown stream '\(stream)': use location, health or microphone")
        }
        switch name {
        case .location:
            if let format, LocationFormat(rawValue: format) == nil {
                throw ValidationError("--format \(format) is not a location format: use gpx, geojson or jsonl")
            }
        case .health:
            if let format, HealthFormat(rawValue: format) == nil {
                throw ValidationError("--format \(format) is not a health format: use jsonl or csv")
            }
        case .microphone:
            if format != nil { throw ValidationError("the microphone is exported as .opus files: leave out --format, give --out DIR") }
            if out == nil { throw ValidationError("the microphone needs --out DIR: a directory for one .opus file per chunk") }
        }
    }

    func run() throws {
        let now = Date()
        func time(_ text: String?, _ option: String) throws -> Date? {
            guard let text else { return nil }
            do { return try TimeArgument.parse(text, option: option, now: now) } catch let invalid as TimeArgument.Invalid {
                throw ValidationError(invalid.description)
            }
        }
        let since = try time(self.since, "--since"), until = try time(self.until, "--until")
        let config = try AgentConfig.load(path: options.config, missingOK: true)
        let database: AgentDatabase
        do {
            database = try AgentDatabase(readOnlyPath: config.storage.database)
        } catch {
            throw ExportError("cannot read \(config.storage.database): \(error); run as the service user or root (sudo), or pass --config")
        }
        let started = Date()
        let summary: String
        // An ExportError ends the command with its message and exit status 1.
        do {
            switch StreamName(rawValue: stream) {
            case .location:
                let format = LocationFormat(rawValue: self.format ?? "gpx") ?? .gpx
                let name = config.server.deviceName.isEmpty ? "ariata-agent" : config.server.deviceName
                let output = try ExportOutput(path: out)
                let count = try LocationExport(format: format, deviceName: name).write(from: database, since: since, until: until, to: output)
                summary = "exported \(count) location fixes as \(format.rawValue) (\(output.bytesWritten) bytes)"
            case .health:
                let format = HealthFormat(rawValue: self.format ?? "jsonl") ?? .jsonl
                let output = try ExportOutput(path: out)
                let count = try HealthExport(format: format).write(from: database, since: since, until: until, to: output)
                summary = "exported \(count) health samples as \(format.rawValue) (\(output.bytesWritten) bytes)"
            case .microphone:
                let written = try AudioExport().write(from: database, since: since, until: until, directory: out ?? ".")
                summary = "exported \(written.files) audio chunks to \(out ?? ".") (\(written.bytes) bytes)"
                    + (written.skipped > 0 ? "; \(written.skipped) records without audio skipped" : "")
            case nil:
                throw ValidationError("unknown stream '\(stream)'")
            }
        }
        // On standard error: standard output may be the export itself.
        let seconds = String(format: "%.2f", Date().timeIntervalSince(started))
        FileHandle.standardError.write(Data("\(summary) in \(seconds) s\n".utf8))
    }
}
