import Foundation

/// The checkout the tests and the benchmarks were built from: where the reference
/// configuration, the docs, the demo's feeders and the reference receiver are read.
public enum Repository {
    /// The repository's root directory (this file is TestSupport/Rigs/Repository.swift).
    public static let root: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// `relative` (such as "docs/status.schema.json") under the root.
    public static func path(_ relative: String) -> String { "\(root)/\(relative)" }
}
