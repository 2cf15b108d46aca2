import Foundation

/// Where onboarding's questions go. The terminal is one; `--yes` answers every question
/// with its default without asking.
public protocol Prompter: AnyObject {
    /// True when a person answers (the terminal); false when defaults are taken.
    var isInteractive: Bool { get }
    /// Asks for a line; an empty answer takes `defaultValue` (shown in brackets).
    func ask(_ question: String, default defaultValue: String?) throws -> String
    /// Asks for a secret without echoing it. `defaultLabel` is shown in brackets (never
    /// the secret itself); an empty answer returns "" and the caller keeps its current one.
    func askSecret(_ question: String, defaultLabel: String?) throws -> String
    /// A yes/no question; an empty answer takes `defaultValue`.
    func confirm(_ question: String, default defaultValue: Bool) throws -> Bool
}

/// The input ended (Ctrl-D) in the middle of a question.
public struct InputEnded: Error, CustomStringConvertible {
    public var description: String { "the input ended before onboarding was done; nothing was written" }
}

/// Questions on the terminal: stdin/stdout, secrets read with echo off.
public final class TerminalPrompter: Prompter {
    private let output: Console

    public init(output: Console) {
        self.output = output
    }

    public var isInteractive: Bool { true }

    public func ask(_ question: String, default defaultValue: String?) throws -> String {
        let shown = defaultValue.flatMap { $0.isEmpty ? nil : " [\($0)]" } ?? ""
        output.write("\(question)\(shown): ")
        guard let line = readLine(strippingNewline: true) else { throw InputEnded() }
        let answer = line.trimmingCharacters(in: .whitespaces)
        return answer.isEmpty ? (defaultValue ?? "") : answer
    }

    public func askSecret(_ question: String, defaultLabel: String?) throws -> String {
        let shown = defaultLabel.map { " [\($0)]" } ?? ""
        output.write("\(question)\(shown): ")
        let line = EchoOff.whileReading { readLine(strippingNewline: true) }
        // The user's Enter was not echoed either.
        output.write("\n")
        guard let line else { throw InputEnded() }
        return line.trimmingCharacters(in: .whitespaces)
    }

    public func confirm(_ question: String, default defaultValue: Bool) throws -> Bool {
        while true {
            output.write("\(question) [\(defaultValue ? "Y/n" : "y/N")]: ")
            guard let line = readLine(strippingNewline: true) else { throw InputEnded() }
            switch line.trimmingCharacters(in: .whitespaces).lowercased() {
            case "": return defaultValue
            case "y", "yes": return true
            case "n", "no": return false
            default: output.write("please answer y or n\n")
            }
        }
    }
}

/// `--yes`: every question takes its default. Questions without a default are not asked
/// (onboarding checks first that the flags gave everything it needs).
public final class DefaultAnswers: Prompter {
    public init() {}
    public var isInteractive: Bool { false }
    public func ask(_ question: String, default defaultValue: String?) throws -> String { defaultValue ?? "" }
    public func askSecret(_ question: String, defaultLabel: String?) throws -> String { "" }
    public func confirm(_ question: String, default defaultValue: Bool) throws -> Bool { defaultValue }
}

/// Turns the terminal's echo off while a secret is typed, and back on even when the user
/// presses Ctrl-C in the middle (the shell would otherwise be left without echo).
enum EchoOff {
    // Written before the handler is installed and read only by it: one prompt at a time.
    nonisolated(unsafe) private static var saved = termios()

    static func whileReading<T>(_ read: () -> T) -> T {
        guard isatty(STDIN_FILENO) != 0, tcgetattr(STDIN_FILENO, &saved) == 0 else { return read() }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        let previous = signal(SIGINT) { _ in
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &EchoOff.saved)
            _exit(130)
        }
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            signal(SIGINT, previous)
        }
        return read()
    }
}

/// Onboarding's and doctor's output: written straight to the file descriptor, so text,
/// prompts and progress bars appear in order whatever stdout is (a pipe buffers `print`).
public final class Console: Sendable {
    private let handle: FileHandle

    public init(_ handle: FileHandle = .standardOutput) {
        self.handle = handle
    }

    public func write(_ text: String) {
        handle.write(Data(text.utf8))
    }

    public func line(_ text: String = "") {
        write(text + "\n")
    }
}
