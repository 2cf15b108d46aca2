import AgentCore
import ArgumentParser
import Foundation

struct PurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Deletes records still on this device (not what the server already has).",
        discussion: """
            Deletes records from the local queue: pending ones (never uploaded: they are lost \\
            for good), uploaded ones (the server keeps its copy; this only frees the device) \\
            and failed ones (refused by the server). Without --pending, --uploaded or \\
            --failed, all three; the flags combine. Without a stream, every stream. With \\
            --before, only records captured before that time.

            It first says how many records and bytes the selection holds and asks for \\
            confirmation on a terminal; elsewhere (a script, a pipe) it needs --yes. Then \\
            it deletes them, overwrites their pages in the database file (nothing of them \\
            lingers on the disk), hands the space back to the file system, and prints what \\
            went. Each purge is recorded as an event that 'ariata-agent status' shows.

            It works while the daemon runs: it deletes in short transactions beside the \\
            daemon's captures (SQLite's locking; nothing the daemon writes meanwhile is \\
            touched unless it falls in the selection). A record already in an upload request \\
            at that moment may still reach the server. The audio chunk being recorded is \\
            not in the queue yet; pause the microphone first ('ariata-agent pause \\
            microphone') to stop new audio.

            TIME is an RFC 3339 time (2026-05-01T18:00:00Z), a local date or date and time \\
            (2026-05-01, '2026-05-01 18:00'), or an age (7d, 12h, 30m: that long ago).

            EXAMPLES
              ariata-agent purge microphone --yes                every audio chunk on the device
              ariata-agent purge --uploaded --before 7d          what the server has, older than a week
              ariata-agent purge location --pending --before '2026-05-01 18:00'

            Exit status: 0 deleted (or nothing to delete), 1 declined or refused without --yes.
            Run it as the user the daemon runs as (or with sudo).
            """)

    @OptionGroup var options: ConfigOptions

    @Argument(help: ArgumentHelp("location, microphone or health; all streams when left out.", valueName: "stream"))
    var stream: String?

    @Option(help: ArgumentHelp("Only records captured before TIME.", valueName: "time"))
    var before: String?

    @Flag(help: "Pending records (not uploaded yet: deleting them loses them).")
    var pending = false
    @Flag(help: "Uploaded records (the server has them).")
    var uploaded = false
    @Flag(help: "Failed records (the server refused them).")
    var failed = false

    @Flag(name: [.short, .long], help: "Do not ask; needed when standard input is not a terminal.")
    var yes = false

    func selection(now: Date = Date()) throws -> PurgeSelection {
        var streams = StreamName.allCases
        if let stream {
            guard let name = StreamName(rawValue: stream) else {
                throw ValidationError("unknown stream '\(stream)': use location, microphone or health")
            }
            streams = [name]
        }
        var statuses: [RecordStatus] = []
        if pending { statuses.append(.pending) }
        if uploaded { statuses.append(.uploaded) }
        if failed { statuses.append(.failed) }
        var before: Date?
        if let text = self.before {
            do {
                before = try TimeArgument.parse(text, option: "--before", now: now)
            } catch let invalid as TimeArgument.Invalid {
                throw ValidationError(invalid.description)
            }
        }
        return PurgeSelection(streams: streams, statuses: statuses.isEmpty ? RecordStatus.allCases : statuses, capturedBefore: before)
    }

    func run() throws {
        let selection = try self.selection()
        let config = try AgentConfig.load(path: options.config, missingOK: true)
        let path = config.storage.database
        guard FileManager.default.fileExists(atPath: path) else {
            print("nothing to delete: there is no queue at \(path) yet")
            return
        }
        let database: AgentDatabase
        do {
            database = try AgentDatabase(path: path)
        } catch {
            throw CommandFailure("cannot open \(path): \(error); run as the service user or root, e.g. sudo ariata-agent purge")
        }
        let preview = try database.housekeeping.purgePreview(selection)
        guard preview.records > 0 else {
            print("nothing to delete: no \(selection.description) in \(path)")
            return
        }
        let what = "\(preview.records) \(selection.description) (\(Self.bytes(preview.payloadBytes))\(Self.breakdown(preview)))"
        if !yes {
            guard isatty(STDIN_FILENO) != 0 else {
                FileHandle.standardError.write(Data("would delete \(what): add --yes to delete without a terminal to confirm on\n".utf8))
                throw ExitCode(1)
            }
            let loses = selection.statuses.contains(.pending) ? " Pending records were never uploaded: they are lost for good." : ""
            print("Delete \(what) from \(path)?\(loses) [y/N] ", terminator: "")
            fflush(nil)   // the question before the answer (stdout is line-buffered on a terminal, and this line has no newline)
            let answer = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
            guard answer == "y" || answer == "yes" else {
                print("nothing deleted")
                throw ExitCode(1)
            }
        }
        let sizeBefore = database.fileBytes()
        let done = try database.housekeeping.purge(selection)
        let sizeAfter = database.fileBytes()
        print("deleted \(done.records) \(selection.description) (\(Self.bytes(done.payloadBytes))\(Self.breakdown(done))); "
              + "the queue file went from \(Self.bytes(sizeBefore)) to \(Self.bytes(sizeAfter))")
    }

    /// ": location 12, microphone 3" when more than one stream is involved.
    static func breakdown(_ count: PurgeCount) -> String {
        guard count.byStream.count > 1 else { return "" }
        return ": " + StreamName.allCases.compactMap { s in count.byStream[s].map { "\(s.rawValue) \($0)" } }.joined(separator: ", ")
    }

    static func bytes(_ n: Int64) -> String {
        n < 1_000 ? "\(n) bytes" : n < 1_000_000 ? String(format: "%.1f kB", Double(n) / 1_000) : String(format: "%.1f MB", Double(n) / 1_000_000)
    }
}
