/// A command that cannot do its work: swift-argument-parser prints "Error: <description>"
/// and exits 1 (CleanExit would exit 0, which a script would take for success).
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
