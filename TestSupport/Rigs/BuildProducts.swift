import Foundation

/// Executables of this package, next to the test bundle in the build directory.
public enum BuildProducts {
    public static var directory: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = (exe as NSString).deletingLastPathComponent
        // The test runner may live inside `<name>.xctest/`; the products sit beside it.
        while dir.hasSuffix(".xctest") || dir.contains(".xctest/") {
            dir = (dir as NSString).deletingLastPathComponent
        }
        return dir
    }

    /// The path of a built executable, or an error that says how to build it.
    public static func executable(_ name: String) throws -> String {
        let path = "\(directory)/\(name)"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw NotInstalled(program: "\(path) (build it first: swift build --build-tests)")
        }
        return path
    }
}
