import Foundation

/// A length of time as a person types it on the command line: `90s`, `15m`, `2h`,
/// `1h30m`, `1d`; a bare number is seconds. Each option that takes one sets its own bounds
/// (a pause's `--for` at most a year; an age such as `export --since 400d` none).
enum DurationArgument {
    /// The seconds `text` names, nil when it is not a duration.
    static func seconds(_ text: String) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [Character: TimeInterval] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var total: TimeInterval = 0
        var digits = ""
        var sawUnit = false
        for character in trimmed {
            if character.isASCII, character.isNumber {
                digits.append(character)
            } else if let unit = units[character], let value = Int(digits) {
                total += TimeInterval(value) * unit
                digits = ""
                sawUnit = true
            } else {
                return nil
            }
        }
        if !digits.isEmpty {
            // A trailing bare number: seconds, but only on its own ("90"), not after a unit ("1h30").
            guard !sawUnit, let value = Int(digits) else { return nil }
            total += TimeInterval(value)
        } else if !sawUnit {
            return nil
        }
        return total
    }
}
