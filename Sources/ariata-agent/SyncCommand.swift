import ArgumentParser

struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Uploads the queue now.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        throw notYetAvailable("sync")
    }
}
