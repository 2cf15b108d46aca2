/// Keeps the latest fix and decides, at each sampling tick, whether there is one to
/// write: only a fix whose time differs from the one last written, so a quiet or
/// stuck receiver never yields duplicates and no fix never yields a record.
struct FixSampler: Sendable, Equatable {
    private(set) var latest: LocationFix?
    private(set) var lastWritten: FixTime?

    init() {}

    mutating func offer(_ fix: LocationFix) {
        latest = fix
    }

    /// The fix to write now, if any. It stays pending until `markWritten` (so a failed
    /// write is retried at the next tick with whatever fix is latest by then).
    var pending: LocationFix? {
        guard let latest, latest.time != lastWritten else { return nil }
        return latest
    }

    /// Also used for a fix that must be skipped (a time the server would reject), so it
    /// is not offered again.
    mutating func markWritten(_ fix: LocationFix) {
        lastWritten = fix.time
    }
}
