import Foundation

/// The options the benchmarks share: `--name N` for whole numbers (a value that is not one
/// keeps the default), `--dir D` where the work directory goes; anything else is a usage
/// error.
struct BenchOptions {
    private var numbers: [String: Int]
    private var directory = NSTemporaryDirectory()

    init(_ arguments: [String], numbers defaults: [String: Int], usage: String) throws {
        numbers = defaults
        var it = arguments.makeIterator()
        while let option = it.next() {
            if option == "--dir" {
                directory = it.next() ?? directory
            } else if let current = numbers[option] {
                numbers[option] = Int(it.next() ?? "") ?? current
            } else {
                throw BenchUsage(text: usage)
            }
        }
    }

    subscript(_ option: String) -> Int { numbers[option] ?? 0 }

    /// A new directory for this run (`ariata-<bench>-bench-<pid>` under `--dir`); the
    /// caller removes it.
    func workDirectory(_ bench: String) throws -> String {
        let work = (directory as NSString).appendingPathComponent("ariata-\(bench)-bench-\(getpid())")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        return work
    }
}

struct BenchUsage: Error, CustomStringConvertible {
    let text: String
    var description: String { text }
}
