import ArgumentParser

struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Runs the device checks of onboarding again.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        throw notYetAvailable("doctor")
    }
}
