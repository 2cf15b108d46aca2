import ArgumentParser

struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resumes capture paused with 'pause'.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        throw notYetAvailable("resume")
    }
}
