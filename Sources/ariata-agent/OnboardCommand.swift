import ArgumentParser

struct OnboardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "onboard",
        abstract: "Sets this device up: server, token, device checks, config file.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        throw notYetAvailable("onboard")
    }
}
