/// Which notices go now: each once per episode. An episode begins when its condition has
/// been seen `confirmRounds` maintenance rounds in a row and ends at the first check that
/// does not see it; then the next episode may send it again (docs/laptop.md#desktop-notices).
struct NoticeEpisodes: Sendable {
    /// Checks in a row each condition has been seen, by key.
    private var seen: [String: Int] = [:]

    /// Takes what holds now; returns the notices to send.
    mutating func due(_ active: [DesktopNotice]) -> [DesktopNotice] {
        var next: [String: Int] = [:]
        var due: [DesktopNotice] = []
        for notice in active where next[notice.key] == nil {
            let rounds = (seen[notice.key] ?? 0) + 1
            next[notice.key] = rounds
            if rounds == notice.confirmRounds { due.append(notice) }
        }
        seen = next
        return due
    }

    /// Forgets every episode (notices turned off).
    mutating func reset() { seen = [:] }
}
