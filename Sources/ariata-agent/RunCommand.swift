import ArgumentParser

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Runs the agent: captures the enabled streams and uploads them (what systemd starts).")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        throw notYetAvailable("run")
    }
}
