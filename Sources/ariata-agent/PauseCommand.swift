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
/// them at once (SIGUSR1); the daemon also rereads them every maintenance round (30 s).
/// `until` ends the pause by itself (nil: until `resume`).
func setPaused(_ paused: Bool, streams: [StreamName], until: Date? = nil, options: ConfigOptions) throws {
    let config = try AgentConfig.load(path: options.config, missingOK: true)
    let database: AgentDatabase
    do {
        database = try AgentDatabase(path: config.storage.database)
    } catch {
        throw CleanExit.message("cannot open \(config.storage.database): \(error)\nrun as the service user or root, e.g. sudo ariata-agent \(paused ? "pause" : "resume")")
    }
    let switches = PauseSwitches(database: database)
    if paused { try switches.pause(streams, until: until) } else { try switches.resume(streams) }
    let names = streams.map(\.rawValue).joined(separator: ", ")
    var told = "the daemon is not running; it will start with this setting"
    if FileLock.daemon(databasePath: config.storage.database).isLocked(),
       let pid = try database.agentState.value(AgentStateKey.daemonPID).flatMap(Int32.init) {
        told = kill(pid, SIGUSR1) == 0 ? "the daemon (pid \(pid)) applied it"
            : "could not signal the daemon (pid \(pid)): it applies the setting within 30 s"
    }
    if let until {
        let local = LocalClockTime.string(until, now: Date())
        print("paused \(names) until \(local) (\(RFC3339.string(from: until))): \(told). Capture resumes by itself then, "
              + "also across a restart or a suspend; 'ariata-agent resume' ends the pause earlier.")
    } else {
        print("\(paused ? "paused" : "resumed") \(names): \(told). It stays so across restarts.")
    }
    // A resume cannot undo the server's switch: say so rather than let it look resumed.
    let serverOff = ServerSwitches.load(from: database, endpoint: config.server.endpoint)?.switchedOffStreams ?? []
    for stream in streams where !paused && serverOff.contains(stream) {
        print("\(stream.rawValue) stays off: the server switched it off in its web UI; it resumes when switched on there")
    }
}

struct PauseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pauses capture of one stream, or of all (privacy switch), for good or for a while.",
        discussion: """
            Capture of the stream stops at once; the daemon keeps running and keeps uploading \
            what is already queued. A paused microphone writes nothing more: its chunk in \
            progress ends at the pause and is stored, and the device is released.

            Without --for or --until the pause lasts until 'ariata-agent resume', across \
            restarts. With one of them it ends by itself at that time: the end is a wall-clock \
            time kept in the queue database, so it holds across a restart of the daemon and a \
            suspend of the machine (a pause that ended while the laptop slept is over when it \
            wakes). 'ariata-agent resume' ends it earlier; pausing again replaces the end \
            ('pause' alone makes it open-ended). 'ariata-agent status' shows each paused \
            stream with when it resumes.

            EXAMPLES
              ariata-agent pause microphone --for 1h       the microphone, for an hour
              ariata-agent pause --until 18:00             every stream, until the next 18:00
              ariata-agent pause location --for 1h30m
              ariata-agent pause microphone                until 'ariata-agent resume microphone'

            Run it as the user the daemon runs as (or with sudo): it writes the queue \
            database and signals the daemon (SIGUSR1), which applies it at once.
            """)

    @OptionGroup var options: ConfigOptions
    @OptionGroup var selection: StreamSelection

    @Option(name: .customLong("for"), help: ArgumentHelp(
        "Ends the pause by itself after this long: 90s, 15m, 2h, 1h30m, 1d (a bare number is seconds).",
        valueName: "duration"))
    var duration: String?

    @Option(help: ArgumentHelp(
        "Ends the pause by itself at this local time: 18:00 or 18:00:30 (the next such time: tomorrow when it has passed today), or an RFC 3339 time.",
        valueName: "time"))
    var until: String?

    func validate() throws {
        if duration != nil && until != nil {
            throw ValidationError("give --for or --until, not both")
        }
    }

    /// When the pause ends, nil for one until `resume`.
    func end(now: Date = Date()) throws -> Date? {
        do {
            if let duration { return now.addingTimeInterval(try PauseEnd.duration(duration)) }
            if let until { return try PauseEnd.time(until, after: now) }
        } catch let invalid as PauseEnd.Invalid {
            throw ValidationError(invalid.description)
        }
        return nil
    }

    func run() throws {
        try setPaused(true, streams: selection.streams(), until: end(), options: options)
    }
}

struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resumes capture paused with 'pause', timed or not.",
        discussion: """
            Ends the pause of one stream, or of every stream when none is named, at once: \
            the daemon is signalled and starts capture again. A timed pause \
            ('pause --for', '--until') needs no resume: it ends by itself. A stream the \
            server switched off in its web UI stays off (resume says so): it resumes when \
            switched on there ('ariata-agent status' shows it as off (server)).
            """)

    @OptionGroup var options: ConfigOptions
    @OptionGroup var selection: StreamSelection

    func run() throws {
        try setPaused(false, streams: selection.streams(), options: options)
    }
}
