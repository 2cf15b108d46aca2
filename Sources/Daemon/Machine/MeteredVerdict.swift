import AgentCore
import Foundation

/// Whether the connection counts as metered, and which rule decided
/// (docs/laptop.md#metered-networks), in this order:
///
/// 1. a carrier's connection id or Wi-Fi SSID (or the VPN's id) listed in
///    `[upload] metered_networks`: metered, whatever NetworkManager guesses (an iPhone's
///    hotspot reads `guess-no`);
/// 2. the `Metered` of the devices under the default route, looked through a VPN: metered
///    when any says (or guesses) yes, not metered when the others say no;
/// 3. NetworkManager's global `Metered`, when no device says.
public struct MeteredVerdict: Sendable, Equatable {
    public enum Rule: String, Sendable, Equatable {
        /// `[upload] metered_networks` named the network.
        case meteredNetworks = "metered_networks"
        /// A device under the default route said.
        case device
        /// NetworkManager's global `Metered`.
        case networkManager = "networkmanager"
    }

    /// nil: nobody knows (uploads go as on any network).
    public var metered: Bool?
    public var rule: Rule
    /// The rule's words, after "metered: ": "listed in metered_networks (Ana's iPhone)",
    /// "NetworkManager says yes for wlan0", "NetworkManager guesses no".
    public var reason: String
    /// NetworkManager's word for what decided (the device's, or its global one): `yes`,
    /// `guess-no`, ... For a listed network, what NetworkManager guesses of it.
    public var value: String
    /// The carrier connection's id and SSID, and the devices, as read.
    public var connection: String?
    public var ssid: String?
    public var devices: [String]
    /// The VPN looked through.
    public var tunnel: String?

    /// "metered: listed in metered_networks (Ana's iPhone)".
    public var text: String {
        (metered == true ? "metered: " : metered == false ? "not metered: " : "metering unknown: ") + reason
    }

    public static func decide(_ reading: MeteredNetworkReading, meteredNetworks: [String]) -> MeteredVerdict {
        let devices = reading.carriers.flatMap(\.devices)
        let carrier = reading.carriers.first
        var verdict = MeteredVerdict(metered: nil, rule: .networkManager, reason: "", value: reading.global.word,
                                     connection: carrier?.id, ssid: devices.compactMap(\.ssid).first,
                                     devices: devices.map(\.interface), tunnel: reading.tunnel)
        let listed = Set(meteredNetworks.map(Self.comparable))
        let names = reading.carriers.map(\.id) + devices.compactMap(\.ssid) + (reading.tunnel.map { [$0] } ?? [])
        let judged = devices.first { $0.metering.isMetered } ?? devices.first { $0.metering != .unknown }
        if let name = names.first(where: { !$0.isEmpty && listed.contains(Self.comparable($0)) }) {
            verdict.metered = true
            verdict.rule = .meteredNetworks
            verdict.reason = "listed in metered_networks (\(name))"
            if let judged { verdict.value = judged.metering.word }
        } else if let device = judged {
            verdict.metered = device.metering.isMetered
            verdict.rule = .device
            verdict.reason = "\(reading.watchedBy) \(Self.says(device.metering)) for \(device.interface)"
                + (reading.tunnel.map { ", under \($0)" } ?? "")
            verdict.value = device.metering.word
        } else {
            verdict.metered = reading.global == .unknown ? nil : reading.global.isMetered
            verdict.reason = "\(reading.watchedBy) \(Self.says(reading.global))"
        }
        return verdict
    }

    /// "says yes", "guesses no", "says unknown".
    static func says(_ metering: NetworkMetering) -> String {
        switch metering {
        case .yes: "says yes"
        case .no: "says no"
        case .guessYes: "guesses yes"
        case .guessNo: "guesses no"
        case .unknown: "does not know"
        }
    }

    /// Names compare without case and with any apostrophe as the plain one: an iPhone
    /// names its hotspot "Ana’s iPhone" with a typographic one, which a person types plain.
    static func comparable(_ name: String) -> String {
        name.trimmingCharacters(in: .whitespaces).lowercased()
            .replacingOccurrences(of: "\u{2019}", with: "'").replacingOccurrences(of: "\u{2018}", with: "'")
    }
}
