import ArgumentParser

struct PauseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pauses capture of one stream or of all.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        throw notYetAvailable("pause")
    }
}
