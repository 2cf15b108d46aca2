extension StringProtocol {
    /// The text without its leading and trailing whitespace (spaces, tabs, CR, LF), with the
    /// standard library's `Character.isWhitespace`, not Foundation's `CharacterSet`, whose
    /// code the daemon otherwise does not run (docs/decisions/0005-start-up-page-drop.md).
    public func trimmingWhitespace() -> SubSequence {
        let start = drop(while: \.isWhitespace)
        let end = start.lastIndex { !$0.isWhitespace }.map { start.index(after: $0) } ?? start.startIndex
        return start[..<end]
    }
}
