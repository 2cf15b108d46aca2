import CALSA

/// alsa-lib writes a line to stderr (the journal, under systemd) for each device it fails
/// to open. The microphone's periodic attempts at a device that is still unplugged would
/// repeat that line every few seconds for as long as it stays out; they run with it
/// dropped. The handler is process-wide: only the capture thread uses alsa-lib in the
/// daemon.
enum ALSADiagnostics {
    static func dropped<T>(_ body: () -> T) -> T {
        ariata_alsa_quiet(1)
        defer { ariata_alsa_quiet(0) }
        return body()
    }
}
