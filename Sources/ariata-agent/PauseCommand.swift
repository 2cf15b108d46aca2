import AgentCore
import ArgumentParser
import Foundation

/// The stream argument of `pause` and `resume`: one stream, or all when left out.
struct StreamSelection: ParsableArguments {
    @Argument(help: ArgumentHelp("location, microphone or health; all streams when left out.", valueName: "stream"))
    var stream: String?

    func streams() throws -> [StreamName] {
        guard let stream else { return StreamName.allCases }
        guard let name = StreamName(rawValue: stream) else {
            throw ValidationError("unknown stream '\(stream)': use location, microphone or health")
        }
        return [name]
    }
}

/// Writes the pause switches to the queue database and tells a running daemon to apply
/// them at once (SIGUSR1); the daemon also rereads them every 30 s.
func setPaused(_ paused: Bool, streams: [StreamName], options: ConfigOptions) throws {
    let config = try AgentConfig.load(path: options.config, missingOK: true)
    let queue: SQLiteQueue
    do {
        queue = try SQLiteQueue(path: config.storage.database)
    } catch {
        throw CleanExit.message("cannot open \(config.storage.database): \(error)\nrun as the service user or root, e.g. sudo ariata-agent \(paused ? "pause" : "resume")")
    }
    let switches = PauseSwitches(queue: queue)
    if paused { try switches.pause(streams) } else { try switches.resume(streams) }
    let names = streams.map(\.rawValue).joined(separator: ", ")
    var told = "the daemon is not running; it will start with this setting"
    if FileLock.daemon(databasePath: config.storage.database).isHeld(),
       let pid = try queue.state(AgentStateKey.daemonPID).flatMap(Int32.init) {
        told = kill(pid, SIGUSR1) == 0 ? "the daemon (pid \(pid)) applied it"
            : "could not signal the daemon (pid \(pid)): it applies the setting within 30 s"
    }
    print("\(paused ? "paused" : "resumed") \(names): \(told). It stays so across restarts.")
}

struct PauseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pauses capture of one stream, or of all (privacy switch).",
        discussion: """
            Capture of the stream stops at once; the daemon keeps running and keeps uploading \
            what is already queued. The microphone finishes and stores the chunk in progress. \
            The switch survives restarts until 'ariata-agent resume'.
            """)

    @OptionGroup var options: ConfigOptions
    @OptionGroup var selection: StreamSelection

    func run() throws {
        try setPaused(true, streams: selection.streams(), options: options)
    }
}

struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resumes capture paused with 'pause'.")

    @OptionGroup var options: ConfigOptions
    @OptionGroup var selection: StreamSelection

    func run() throws {
        try setPaused(false, streams: selection.streams(), options: options)
    }
}
