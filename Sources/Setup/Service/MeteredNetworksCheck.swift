import AgentCore
import Foundation
import Platform

/// On a laptop (a system battery in `[power] sysfs_path`), onboard and doctor say how the
/// uploads treat a metered network and how to mark a phone's hotspot NetworkManager cannot
/// tell: an iPhone's reads `guess-no` (docs/laptop.md#metered-networks). Nothing on a
/// machine without a battery, which does not travel.
struct MeteredNetworksCheck {
    let config: AgentConfig

    func check() -> DeviceCheck? {
        let power = PowerSupply.read(path: config.power.sysfsPath)
        guard power.batteryPercent != nil || power.batteryStatus != nil else { return nil }
        let upload = config.upload
        let listed = upload.meteredNetworks.isEmpty ? "" : "; counted as metered now: " + upload.meteredNetworks.joined(separator: ", ")
        let mark = "NetworkManager cannot tell every phone's hotspot (an iPhone's reads guess-no): mark one with "
            + "'nmcli connection modify <name> connection.metered yes', or add its name or SSID to [upload] metered_networks"
        let held = Self.held(upload.onMetered)
        return DeviceCheck(name: "metered networks", outcome: .ok, detail: "\(held). \(mark)\(listed)")
    }

    /// What `[upload] on_metered` holds back, in words.
    private static func held(_ onMetered: OnMetered) -> String {
        switch onMetered {
        case .all: "a laptop: every stream uploads on any network, a metered one too ([upload] on_metered = \"all\")"
        case .small: "a laptop: on a metered network audio waits for an unmetered one ([upload] on_metered = \"small\")"
        case .none: "a laptop: on a metered network nothing uploads until an unmetered one ([upload] on_metered = \"none\")"
        }
    }
}
