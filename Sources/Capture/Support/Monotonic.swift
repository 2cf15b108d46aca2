import Foundation

/// Seconds on CLOCK_MONOTONIC: what every deadline and wait of the capture threads is
/// measured against, so a step of the wall clock (NTP at boot, a clock set by hand) can
/// neither stretch nor cut them short.
enum Monotonic {
    static var now: TimeInterval {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return TimeInterval(spec.tv_sec) + TimeInterval(spec.tv_nsec) / 1e9
    }
}
