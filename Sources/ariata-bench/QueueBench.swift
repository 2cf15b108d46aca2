struct BenchNotWritten: Error, CustomStringConvertible {
    let name: String
    var description: String { "the \(name) benchmark is not written yet" }
}

enum QueueBench {
    static func run(_ arguments: [String]) throws {
        throw BenchNotWritten(name: "queue")
    }
}
