enum LocationBench {
    static func run(_ arguments: [String]) throws {
        throw BenchNotWritten(name: "location")
    }
}
