enum UploadBench {
    static func run(_ arguments: [String]) throws {
        throw BenchNotWritten(name: "upload")
    }
}
