import AgentCore
import ArgumentParser
import Foundation
import Reports

struct CoverageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coverage",
        abstract: "Shows a day of capture per stream: when each captured, and why not when it did not.",
        discussion: """
            Reads the coverage ledger in the queue database (read-only: it works beside the \
            running daemon). Draws the day in the local time zone, one line per stream, one \
            character per 96th of the day (15 min) for the state that held most of it, with a \
            legend, then each stream's captured share and its largest gap with the reason \
            (docs/operations.md, "Coverage").

            --json prints the same for scripts (docs/operations.md, "Coverage"). --svg FILE \
            also writes the day as an SVG picture: a 24-hour axis in local time, a row per \
            stream, a colour per reason, captured time split into uploaded and pending.
            """)

    @OptionGroup var options: ConfigOptions

    @Option(help: "The day to show: a local date (2026-05-01) or an age (1d: yesterday). Default: today.")
    var day: String?

    @Option(help: "Only this stream (location, microphone, health).")
    var stream: String?

    @Flag(help: "Print JSON instead of the picture.")
    var json = false

    @Option(help: "Also write the day as an SVG picture to this file.")
    var svg: String?

    func run() throws {
        let now = Date()
        var moment = now
        if let day {
            do { moment = try TimeArgument.parse(day, option: "--day", now: now) } catch let invalid as TimeArgument.Invalid {
                throw ValidationError(invalid.description)
            }
        }
        var only: StreamName?
        if let stream {
            guard let name = StreamName(rawValue: stream) else {
                throw ValidationError("--stream \(stream): use one of \(StreamName.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            only = name
        }
        let config = try AgentConfig.load(path: options.config, missingOK: true)
        let database: AgentDatabase
        do {
            database = try AgentDatabase(readOnlyPath: config.storage.database)
        } catch {
            throw CommandFailure("cannot read \(config.storage.database): \(error); run as the service user or root (sudo), or pass --config")
        }
        let streams = try only.map { [$0] } ?? Set(StreamName.allCases.filter(config.isEnabled) + database.coverage.streams()).sorted()
        let picture = try CoverageDay.read(database, day: moment, streams: streams, now: now)
        if let svg {
            let picture = CoverageSVG(pendingCells: try CoverageSVG.pendingCells(picture, queue: database.recordQueue)).render(picture)
            do {
                try Data(picture.utf8).write(to: URL(fileURLWithPath: svg))
            } catch {
                throw CommandFailure("cannot write \(svg): \(error)")
            }
        }
        if json {
            FileHandle.standardOutput.write(try CoverageJSON(picture).data())
            FileHandle.standardOutput.write(Data("\n".utf8))
        } else {
            print(CoverageText().render(picture), terminator: "")
        }
    }
}
