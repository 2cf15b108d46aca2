import Capture
import DBus
import Foundation

/// Why GeoClue gives this machine no position, or only a coarse one: what `doctor` and
/// `onboard` look for when the fix they took is missing or over `max_accuracy`, each cause
/// with the change that ends it (docs/laptop.md, "When GeoClue knows only the IP address").
struct GeoClueDiagnosis {
    struct Cause: Equatable {
        var detail: String
        var fix: String
    }

    /// GeoClue's files and version (`ARIATA_GEOCLUE_ROOT` and `ARIATA_GEOCLUE_VERSION` in tests).
    let files: GeoClueAgentWhitelist
    /// Where GeoClue's compiled-in locator URL is read from when no file sets one.
    var executable = "/usr/libexec/geoclue"
    /// Whether wpa_supplicant is on the system bus (or can be started there); nil: cannot tell.
    let hasWPASupplicant: Bool?

    static let retiredHost = "location.services.mozilla.com"
    static let beaconDB = "https://api.beacondb.net/v1/geolocate"
    static let beaconDBDropIn = "90-beacondb.conf"
    static let demoAgent = "/usr/libexec/geoclue-2.0/demos/agent"

    /// The Wi-Fi locator GeoClue asks: `[wifi] url` of its files, else the one built in.
    var locatorURL: String? {
        files.setting("url", inSection: "wifi")?.value ?? Self.builtInURL(executable)
    }

    var wifiEnabled: Bool {
        files.setting("enable", inSection: "wifi")?.value.lowercased() != "false"
    }

    /// What keeps GeoClue from a position here, most decisive first.
    func causes() -> [Cause] {
        var causes: [Cause] = []
        if !wifiEnabled {
            let file = files.setting("enable", inSection: "wifi")?.file ?? files.mainFile
            causes.append(Cause(detail: "GeoClue's Wi-Fi source is off",
                                fix: "in \(file), section [wifi], set enable=true and restart geoclue (sudo systemctl restart geoclue)"))
        }
        if let url = locatorURL, url.contains(Self.retiredHost) {
            let fix = files.readsDropIns
                ? "write \(files.dropInDirectory)/\(Self.beaconDBDropIn) with the two lines `[wifi]` and `url=\(Self.beaconDB)`, then sudo systemctl restart geoclue"
                : "in \(files.mainFile), section [wifi], set url=\(Self.beaconDB) and restart geoclue (sudo systemctl restart geoclue)"
            causes.append(Cause(detail: "GeoClue's Wi-Fi locator is still Mozilla's retired service (\(url)), which answers nothing", fix: fix))
        }
        if hasWPASupplicant == false {
            causes.append(Cause(detail: "no wpa_supplicant on the system bus (iwd, or no Wi-Fi): GeoClue cannot scan Wi-Fi and can only look up the IP address",
                                fix: "run wpa_supplicant as the Wi-Fi backend (NetworkManager's default; with iwd, remove wifi.backend=iwd from /etc/NetworkManager/conf.d and sudo systemctl enable --now wpa_supplicant), or attach a GPS receiver to gpsd"))
        }
        return causes
    }

    /// The cause of only IP-level fixes when none of the above is: the locator itself.
    func unknownPlaceCause(maxAccuracy: Int) -> Cause {
        Cause(detail: "the Wi-Fi locator (\(locatorURL ?? "GeoClue's")) knows none of the access points here",
              fix: "add this place to BeaconDB (a stumbler app such as NeoStumbler on a phone), attach a GPS receiver to gpsd, or set [location] max_accuracy = 0 to keep fixes coarser than \(maxAccuracy) m")
    }

    /// A user service on a desktop without a GeoClue agent.
    static let noDesktopAgent = Cause(
        detail: "GeoClue waits for the desktop's location agent, and none runs for this user",
        fix: "turn location services on in the desktop's privacy settings; a desktop without an agent of its own can run GeoClue's demo agent in the session (\(demoAgent) &, e.g. from its autostart), or run ariata-agent as the system service, which is its own agent")

    /// The geolocate URL built into GeoClue, read from its executable (the default for a
    /// file without `[wifi] url`: Mozilla's before Debian 12's update, BeaconDB's after).
    static func builtInURL(_ executable: String) -> String? {
        guard let data = FileManager.default.contents(atPath: executable) else { return nil }
        for marker in ["https://api.beacondb.net/v1/geolocate", "https://location.services.mozilla.com/v1/geolocate"] {
            guard let start = data.range(of: Data(marker.utf8)) else { continue }
            let end = data[start.lowerBound...].firstIndex(of: 0) ?? start.upperBound
            return String(decoding: data[start.lowerBound..<end], as: UTF8.self)
        }
        return nil
    }

    /// Whether wpa_supplicant owns its name on the bus or can be started by it.
    static func wpaSupplicantPresent(on connection: DBusConnection) -> Bool? {
        let name = "fi.w1.wpa_supplicant1"
        let dbus = { (member: String, arguments: [DBusValue]) throws(DBusError) -> [DBusValue] in
            try connection.call(DBusMethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                               interface: "org.freedesktop.DBus", member: member, arguments: arguments), timeout: 5)
        }
        do {
            if case .bool(true)? = try dbus("NameHasOwner", [.string(name)]).first { return true }
            guard case .array(_, let names)? = try dbus("ListActivatableNames", []).first else { return nil }
            return names.contains { $0.string == name }
        } catch {
            return nil
        }
    }
}
