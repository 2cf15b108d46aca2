import Foundation

/// The options the benchmarks share: `--name N` for whole numbers, `--dir D` where the work
/// directory goes, the switches a benchmark names in `flags`; anything else, or a value
/// that is not a whole number, is a usage error (it once kept the default: `--minutes 1.5`
/// ran for 10).
struct BenchOptions {
    private var numbers: [String: Int]
    private var directory = NSTemporaryDirectory()
    private var given: Set<String> = []

    init(_ arguments: [String], numbers defaults: [String: Int], flags: Set<String> = [], usage: String) throws {
        numbers = defaults
        var it = arguments.makeIterator()
        while let option = it.next() {
            if option == "--dir" {
                directory = it.next() ?? directory
            } else if flags.contains(option) {
                given.insert(option)
            } else if numbers[option] != nil {
                let value = it.next() ?? ""
                guard let number = Int(value) else {
                    throw BenchUsage(text: "\(option) takes a whole number, not '\(value)'\n\(usage)")
                }
                numbers[option] = number
            } else {
                throw BenchUsage(text: usage)
            }
        }
    }

    subscript(_ option: String) -> Int { numbers[option] ?? 0 }

    /// Whether the switch `flag` was given.
    func has(_ flag: String) -> Bool { given.contains(flag) }

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
