import Foundation
import Rigs

/// Drives an interactive command through a real pseudo-terminal with Python's pexpect
/// (Debian's python3-pexpect): the test writes the dialogue as a short pexpect script,
/// the rig runs it with the system python3 and hands back its exit status and the whole
/// terminal transcript (what a person would have seen, typed answers included where the
/// terminal echoed them).
public enum PexpectRig {
    public struct Outcome {
        public let status: Int32
        /// The script's own stdout/stderr (its failure messages).
        public let log: String
        /// Everything the program under test wrote to the terminal.
        public let transcript: String
    }

    /// Header every script gets: `child` is the spawned command (argv from the JSON in
    /// `sys.argv[1]`, environment changes from `sys.argv[3]`), its terminal output is
    /// logged to `sys.argv[2]`, and `expect(text)`
    /// waits for text or fails the script with what the screen showed instead.
    static let prelude = """
        import json, os, sys, pexpect
        argv = json.loads(sys.argv[1])
        log = open(sys.argv[2], "w")
        env = dict(os.environ)
        for name, value in json.loads(sys.argv[3]).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=30, dimensions=(50, 200))
        child.logfile_read = log
        def expect(text, timeout=30):
            try:
                child.expect_exact(text, timeout=timeout)
            except (pexpect.TIMEOUT, pexpect.EOF) as error:
                log.flush()
                sys.stderr.write("expected %r; the terminal showed:\\n%s\\n" % (text, child.before))
                sys.exit(3)
        def finish():
            child.expect(pexpect.EOF, timeout=60)
            child.close()
            log.flush()
            sys.exit(child.exitstatus if child.exitstatus is not None else 128 + (child.signalstatus or 0))

        """

    /// Runs `script` (the dialogue, after the prelude) against `command`, with
    /// `environment` changed for it (a nil value removes the variable).
    public static func run(command: [String], script: String, directory: String, environment: [String: String?] = [:],
                           timeout: TimeInterval = 90) throws -> Outcome {
        let python = "/usr/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else { throw NotInstalled(program: python) }
        let probe = try ChildProcess(python, ["-c", "import pexpect"], name: "pexpect-probe", logDirectory: directory)
        guard probe.wait(timeout: 30) == 0 else { throw NotInstalled(program: "python3-pexpect") }

        let scriptPath = "\(directory)/dialogue-\(UUID().uuidString.prefix(8)).py"
        let transcriptPath = scriptPath.replacingOccurrences(of: ".py", with: ".tty")
        try (prelude + script).write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let argv = String(decoding: try JSONSerialization.data(withJSONObject: command), as: UTF8.self)
        let env = String(decoding: try JSONSerialization.data(withJSONObject: environment.mapValues { $0 ?? NSNull() as Any }),
                         as: UTF8.self)
        let child = try ChildProcess(python, [scriptPath, argv, transcriptPath, env], name: "pexpect", logDirectory: directory)
        guard let status = child.wait(timeout: timeout) else {
            child.stop(grace: 2)
            throw TimedOut(what: "the pexpect dialogue \(scriptPath)")
        }
        let transcript = (try? String(contentsOfFile: transcriptPath, encoding: .utf8)) ?? ""
        return Outcome(status: status, log: child.stdout() + child.stderr(), transcript: transcript)
    }
}
