import Foundation

/// A moment as a local clock shows it, for the log and `status`: "07:00", and with the
/// day's name ("Sat 22:00") when it is not within the next 24 hours of `now`.
public enum LocalClockTime {
    public static func string(_ moment: Date, in timeZone: TimeZone = .current, now: Date? = nil) -> String {
        let local = moment.timeIntervalSince1970 + Double(timeZone.secondsFromGMT(for: moment))
        let day = Int((local / 86_400).rounded(.down))
        let minutes = Int((local - Double(day) * 86_400) / 60)
        let time = String(format: "%02d:%02d", minutes / 60, minutes % 60)
        guard let now, moment.timeIntervalSince(now) >= 86_400 || moment < now else { return time }
        let names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        return "\(names[QuietSchedule.isoWeekday(ofDay: day) - 1]) \(time)"
    }
}
