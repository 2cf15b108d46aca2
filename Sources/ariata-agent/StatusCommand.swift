import ArgumentParser

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Shows queues, last sync and the health of each stream.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        throw notYetAvailable("status")
    }
}
