enum AudioBench {
    static func run(_ arguments: [String]) throws {
        throw BenchNotWritten(name: "audio")
    }
}
