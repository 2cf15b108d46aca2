enum HealthBench {
    static func run(_ arguments: [String]) throws {
        throw BenchNotWritten(name: "health")
    }
}
