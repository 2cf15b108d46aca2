import AgentCore
import ArgumentParser
import Foundation
import Logging
import Setup

struct OnboardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "onboard",
        abstract: "Sets this device up: server, token, device checks, config file.",
        discussion: """
            Walks through five steps, like the Ariata phone app's onboarding:

            1. Server: the endpoint (the server's base URL); then onboard asks the server \
            which generation and build it is (GET /health, public on both) and names it \
            ("Ariata 0.1.0", "Virtues 0.4.2, commit d561967, built ..."); then the device \
            token, in the way that server offers it: on a terminal a Virtues server is offered \
            linking by id instead of a code, and --link or --source-id against an Ariata \
            server is refused at once (exit 64) with the command for its code flow. An Ariata server's web UI shows a short pairing code for a \
            new device (--code; sent upper-cased), which the agent exchanges for the token. A \
            Virtues server links a device by its id, which then is its token: --link prints \
            this device's id as text and as a QR code for you to enter in the web UI's page \
            for linking a device, and waits (asking the server every 2 s) until the server \
            has linked it, at most --link-timeout seconds (600); Ctrl-C or the time limit \
            writes nothing. --source-id completes the pending device of a Virtues QR code \
            (the code's "s"). A device token typed in or read from a file works with any \
            server. A refused code (invalid, used or expired) writes nothing and asks for a \
            new one; a code sent to a Virtues server says to use --link. The server's list \
            of streams for this device is checked against the agent's (location, \
            microphone, healthkit) and a missing one is a warning. The endpoint and \
            token are then verified with one request to the ingest endpoint carrying an empty batch \
            (nothing is stored). Each failure says what went wrong and what to do: a host \
            name that does not resolve, a refused connection, an untrusted TLS certificate \
            (--ca-file), a time-out (E001), a refused token (E002, HTTP 401; the body \
            {"error":"Unauthorized"} is a server that refuses every device, told apart and, \
            from a Virtues build of 2026-02 or later, named as that build's known problem), a wrong path \
            (HTTP 404), a redirect, a server error (E003). On a terminal you are asked again \
            (only for the token when the token was refused); with --yes onboard stops. \
            Nothing is written until the server is verified.

            2. Device checks: first the microphone: the capture devices are listed (ALSA's \
            device hints, as 'arecord -L' shows them, and the sources of a PipeWire session, \
            as pipewire:NODE=<source>) with readable names; on a terminal you pick one by \
            number or name (Enter keeps the current one), it is opened once to check it, and \
            it is written as [microphone] device (--microphone-device NAME chooses without \
            asking). While it is missing (unplugged), the daemon captures from [microphone] \
            fallback_device ("default") and takes it back when it returns. The audio chunk \
            length that fits the server is written as [microphone] chunk_seconds, with the \
            reason: 300 s on Virtues (it transcribes each chunk with one paid call), 30 s on \
            Ariata; a chunk_seconds the file already sets is kept. Then: gpsd answers, the ALSA capture device opens, each health file \
            or serial port can be read, the service user is in the groups 'audio' and \
            'dialout', there is free disk. Each failed check prints the command that fixes \
            it. Its stream stays enabled by default (a device that is not there yet, gpsd not \
            started or a USB microphone plugged in later, is retried by the daemon, and \
            'status' shows the stream unhealthy meanwhile); on a terminal you may switch it \
            off there and then, and with --yes --disable-failing such streams are switched off.

            Last in step 2, a Bluetooth LE heart-rate sensor (a chest strap): on a terminal \
            with health on, onboard asks whether to scan for one (Enter: no); --ble-scan \
            scans without asking, also when health is off. The scan listens --ble-scan-seconds \
            (8) for LE devices that advertise the Heart Rate Service, and lists them, \
            strongest signal first, with name, address and signal strength (dBm); you pick \
            one by number (or none; with --yes a sensor is taken only when exactly one is \
            heard). --ble-sensor ADDRESS names the sensor without a scan. onboard connects, \
            pairs the sensor when it refuses notifications unpaired (most straps need no \
            pairing), waits a few seconds for a heart rate, and writes it as a \
            [[health.source]] kind = "ble" with its address and name, switching health on. \
            A powered-off adapter is not switched on for you (bluetoothctl power on); no \
            sensor heard means the strap sleeps: wet its electrodes and put it on.

            3. The configuration file: only the keys onboarding sets are changed (server \
            endpoint, token, device id and name, CA file, the chunk length, a stream switched off, a \
            Bluetooth sensor's [[health.source]], which is appended); every other \
            line, the comments of the installed example and your own, stays as it was. \
            Written atomically, mode 0600, owned by the service user when run as root. The \
            device id already in the file is kept (a new one is made the first time), so the \
            server keeps seeing one device.

            4. Health backfill: for each health file, imports the last backfill_days (7) \
            days now with a progress bar; the daemon goes on from where it ends. Skipped \
            when health is off.

            5. Service: when systemd runs and the unit is installed, enables and starts \
            ariata-agent (or restarts it so it reads the new file); otherwise prints the \
            command that starts the agent. Last, onboard reads an Ariata server's stream \
            switches (POST /api/devices/verify): right after pairing the server has switched no \
            stream on, and nothing is captured until you turn streams on in its web UI \
            (capture starts within a minute of that); onboard says so, or names the streams \
            switched off there.

            Laptop or board: first, onboard looks for a desktop sound server (a PipeWire or \
            PulseAudio session: $XDG_RUNTIME_DIR/pipewire-0 or pulse/native) of the person \
            running it. A sound server serves only the session of the person logged in, so on \
            a laptop or desktop the agent runs as that person's user service: onboard, run as \
            that person without sudo, offers it (--user-service takes it without asking); the \
            configuration is then ~/.config/ariata/agent.toml (what the user unit reads) and \
            the queue ~/.local/state/ariata/agent.sqlite, and step 5 turns lingering on \
            (loginctl enable-linger: the agent starts at boot and keeps running while you are \
            logged out) and runs systemctl --user enable --now ariata-agent. Without a sound \
            server (a headless board), or with --system-service, it is the system service: \
            user ariata, /etc/ariata/agent.toml. Run through sudo on a machine with a sound \
            server, onboard says to run it again as yourself with --user-service.

            Questions show their default in brackets, taken from the existing file; Enter \
            takes it. The token is never shown, printed or logged.

            Scripted installs: pass the answers as flags and --yes, e.g.
              ariata-agent onboard --endpoint URL --code A1B2C3 --yes
              ariata-agent onboard --endpoint URL --token-file FILE --yes
              ariata-agent onboard --endpoint URL --link --yes
              ariata-agent onboard --endpoint URL --source-id ID --yes
              ariata-agent onboard --endpoint URL --code A1B2C3 --user-service --yes   (a laptop, as yourself)
            Without a terminal on standard input, --yes is required.

            Exit status: 0 when the configuration was written; 1 when the server could not \
            be verified, did not link the device in time (or the input ended), nothing \
            written; 130 after Ctrl-C while waiting for the link; 64 for missing or wrong flags \
            or no terminal without --yes; 73 when the file could not be written; 78 when the \
            existing file is broken (it is not overwritten).
            """)

    @OptionGroup var options: ConfigOptions

    @Option(help: ArgumentHelp("The server's base URL, e.g. https://ariata.example.org (the ingest path is added to it).",
                               valueName: "url"))
    var endpoint: String?

    @Option(help: ArgumentHelp("The pairing code the server's web UI shows for a new device (6 characters, short-lived, works once); exchanged for the device token.",
                               valueName: "code"))
    var code: String?

    @Flag(help: ArgumentHelp("Link by device id (a Virtues server): shows this device's id as text and as a QR code, for you to enter in the web UI's page for linking a device, and waits until the server has linked it. The id becomes the device token."))
    var link = false

    @Option(help: ArgumentHelp("How long --link waits for the link, in seconds (default: 600, the life of a pending pairing on the server).",
                               valueName: "seconds"))
    var linkTimeout: Int?

    @Option(help: ArgumentHelp("Complete the pairing a Virtues server's QR code names: its pending source id (the \"s\" of the code's {\"e\": endpoint, \"s\": source id}), or the code's whole text, whose \"e\" then is the endpoint unless --endpoint is given. Works once, for 10 minutes.",
                               valueName: "id"))
    var sourceID: String?

    @Option(help: ArgumentHelp("The device token from the server. Visible in 'ps' while onboard runs: prefer --token-file.",
                               valueName: "token"))
    var token: String?

    @Option(help: ArgumentHelp("Read the device token from this file (white space around it is dropped); it is stored in the configuration file.",
                               valueName: "path"))
    var tokenFile: String?

    @Option(help: ArgumentHelp("A name for this device (default: the one in the file, else the host name).",
                               valueName: "name"))
    var deviceName: String?

    @Option(help: ArgumentHelp("Path of the ingest endpoint below the server URL (default: the one in the file, else /ingest).",
                               valueName: "path"))
    var ingestPath: String?

    @Option(help: ArgumentHelp("CA certificates that signed a self-hosted server's certificate: a PEM file, or a directory indexed by 'openssl rehash'. TLS is always verified. An empty value removes it.",
                               valueName: "path"))
    var caFile: String?

    @Option(help: ArgumentHelp("The ALSA capture device to record from, written as [microphone] device: a name from the list onboard shows (or 'arecord -L'), e.g. default, plughw:CARD=Mic,DEV=0, or pipewire:NODE=<source> for a PipeWire source. Without it, onboard asks on a terminal, and --yes keeps the current one.",
                               valueName: "name"))
    var microphoneDevice: String?

    @Option(help: ArgumentHelp("Set up this Bluetooth LE heart-rate sensor, by address (e.g. A0:9E:1A:12:34:56, as 'bluetoothctl devices' shows it): onboard connects, pairs it if it asks to be, checks that it sends a heart rate, and writes it as a [[health.source]] kind = \"ble\" (health is switched on).",
                               valueName: "address"))
    var bleSensor: String?

    @Flag(help: ArgumentHelp("Scan for Bluetooth LE heart-rate sensors without asking (also with --yes, which then takes the sensor only when exactly one is heard), list them with name, address and signal strength, and set up the one chosen."))
    var bleScan = false

    @Option(help: ArgumentHelp("How long the Bluetooth scan listens, in seconds (default: 8).", valueName: "seconds"))
    var bleScanSeconds: Int?

    @Option(help: ArgumentHelp("Seconds to wait for the server while verifying (default: [server] request_timeout, 30). Not saved.",
                               valueName: "seconds"))
    var timeout: Int?

    @Option(help: ArgumentHelp("The user the service runs as: it owns the configuration file, and its groups are checked.",
                               valueName: "user"))
    var serviceUser: String = "ariata"

    @Flag(help: ArgumentHelp("Run the agent as your own user service (a laptop or desktop with PipeWire or PulseAudio): the configuration under ~/.config/ariata, systemctl --user, lingering. Run onboard as yourself, without sudo."))
    var userService = false

    @Flag(help: ArgumentHelp("Run the agent as the system service (user ariata, /etc/ariata/agent.toml; a headless board), even where a desktop sound server runs."))
    var systemService = false

    @Flag(name: [.customShort("y"), .long], help: "Do not ask: take every default answer (for scripted installs).")
    var yes = false

    @Flag(help: "Switch off a stream whose device check fails (by default it stays on and retries by itself).")
    var disableFailing = false

    func validate() throws {
        if [token != nil, tokenFile != nil, code != nil, link, sourceID != nil].filter({ $0 }).count > 1 {
            throw ValidationError("give one of --code, --link, --source-id, --token and --token-file")
        }
        if let code, code.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("--code: give the code the server shows") }
        if let sourceID, sourceID.hasPrefix("{"), PairingQRCode(text: sourceID) == nil {
            throw ValidationError("--source-id: \(sourceID) is not the text of a pairing QR code ({\"e\": endpoint, \"s\": source id})")
        }
        if let pending = pendingSource, pending.sourceID.isEmpty || !pending.sourceID.unicodeScalars.allSatisfy(Self.sourceIDCharacters.contains) {
            throw ValidationError("--source-id \(pending.sourceID): give the source id the server's QR code holds (letters, digits, '-', '_', '.')")
        }
        if let linkTimeout {
            guard link else { throw ValidationError("--link-timeout goes with --link") }
            guard (1...86_400).contains(linkTimeout) else { throw ValidationError("--link-timeout: give 1 to 86400 seconds") }
        }
        if let microphoneDevice, microphoneDevice.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("--microphone-device: give an ALSA capture device name (see 'arecord -L'), e.g. default")
        }
        if let bleSensor, BLESourceSettings.bluetoothAddress(bleSensor) == nil {
            throw ValidationError("--ble-sensor: \(bleSensor) is not a Bluetooth address: give six hex pairs such as A0:9E:1A:12:34:56 (onboard --ble-scan lists the sensors nearby)")
        }
        if bleSensor != nil && bleScan { throw ValidationError("give one of --ble-sensor and --ble-scan") }
        if let bleScanSeconds {
            guard bleSensor == nil else { throw ValidationError("--ble-scan-seconds goes with a scan, not with --ble-sensor") }
            guard (1...60).contains(bleScanSeconds) else { throw ValidationError("--ble-scan-seconds: give 1 to 60 seconds") }
        }
        if let timeout, !(1...600).contains(timeout) { throw ValidationError("--timeout: give 1 to 600 seconds") }
        if userService && systemService { throw ValidationError("give one of --user-service and --system-service") }
    }

    /// `--source-id`: a bare source id, or the QR code's whole text.
    var pendingSource: PairingQRCode? {
        sourceID.map { PairingQRCode(text: $0) ?? PairingQRCode(endpoint: nil, sourceID: $0) }
    }

    /// What a source id may hold: it goes into the request's path as it is.
    static let sourceIDCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")

    func run() throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let console = Console()
        do {
            let request = OnboardRequest(
                configPath: options.config, endpoint: endpoint ?? pendingSource?.endpoint,
                token: try token.map(Secret.init) ?? tokenFile.map(OnboardRequest.readToken(file:)),
                deviceName: deviceName, ingestPath: ingestPath, caFile: caFile, acceptDefaults: yes,
                timeout: timeout, serviceUser: serviceUser,
                pairingCode: code?.trimmingCharacters(in: .whitespaces), disableFailing: disableFailing,
                link: link, linkTimeout: linkTimeout.map(TimeInterval.init) ?? OnboardRequest.defaultLinkTimeout,
                sourceID: pendingSource?.sourceID,
                serviceMode: userService ? .user : systemService ? .system : nil, microphoneDevice: microphoneDevice,
                bleSensor: bleSensor.flatMap(BLESourceSettings.bluetoothAddress), bleScan: bleScan,
                bleScanSeconds: bleScanSeconds.map(TimeInterval.init) ?? OnboardRequest.defaultBLEScanSeconds)
            let onboarding = Onboarding(request: request, prompter: try request.prompter(console: console),
                                        console: console, logger: Logger(.onboard))
            try onboarding.run()
        } catch let failure as OnboardFailure {
            FileHandle.standardError.write(Data("ariata-agent onboard: \(failure.message)\n".utf8))
            throw ExitCode(failure.exitCode)
        } catch let ended as InputEnded {
            FileHandle.standardError.write(Data("\nariata-agent onboard: \(ended)\n".utf8))
            throw ExitCode(OnboardFailure.notVerified)
        }
    }
}
