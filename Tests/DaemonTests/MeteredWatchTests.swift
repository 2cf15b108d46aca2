import DBus
import Foundation
import Logging
import Synchronization
import TestRigs
import XCTest
@testable import Daemon

/// The watch on NetworkManager's `Metered` against python-dbusmock's NetworkManager on a
/// private system bus (docs/laptop.md#metered-networks): read at start, followed by its
/// signal, NetworkManager absent, leaving and coming later, and no wake-ups while idle; the
/// devices under the default route with their own `Metered` and SSID, looked through a VPN;
/// and the rules that decide from what was read (`MeteredVerdict`).
final class MeteredWatchTests: XCTestCase {
    func testNetworkManagersValuesReadAsMeteredOnlyForYesAndGuessYes() {
        let metered = (0...5).map { NetworkMetering(networkManagerValue: $0).isMetered }
        XCTAssertEqual(metered, [false, true, false, true, false, false])
        XCTAssertEqual(NetworkMetering(networkManagerValue: 3).word, "guess-yes")
        XCTAssertEqual(NetworkMetering(networkManagerValue: 9), .unknown, "a value of a later NetworkManager: today's behaviour")
    }

    private final class Heard: Sendable {
        let states = Mutex<[MeteredNetworkState]>([])
        func append(_ state: MeteredNetworkState) { states.withLock { $0.append(state) } }
        var all: [MeteredNetworkState] { states.withLock { $0 } }
        var last: MeteredNetworkState? { all.last }
    }

    /// NetworkManager's global `Metered` alone, as a template without devices reads.
    private func global(_ metering: NetworkMetering) -> MeteredNetworkState {
        .watched(MeteredNetworkReading(watchedBy: "NetworkManager", global: metering))
    }

    /// On a link of the test's own, whose bus thread the idle count below finds by name.
    private func watch(_ bus: DBusRig) -> NetworkManagerMeteredWatch {
        NetworkManagerMeteredWatch(service: DBusService(NetworkManagerMeteredWatch.service,
                                                        on: DBusLink(.address(bus.address), threadName: "ariata-nmtest")),
                                   logger: Logger(label: "test"))
    }

    func testItReadsMeteredBeforeStartReturnsThenFollowsEveryChange() throws {
        let bus = try DBusRig(.system)
        let networkManager = try DBusMockRig.networkManager(on: bus, metered: 3)
        let watch = watch(bus)
        let heard = Heard()
        watch.start(report: heard.append)
        defer { watch.stop() }
        XCTAssertEqual(heard.all, [global(.guessYes)], "the first cycle must know it")

        try networkManager.setMetered(2)
        try waitUntil("the change to 'no'", timeout: 10) { heard.last == global(.no) }
        try networkManager.setMetered(1)
        try waitUntil("the change to 'yes'", timeout: 10) { heard.last == global(.yes) }
        XCTAssertEqual(heard.all.count, 3, "\(heard.all)")

        // Idle: the connection's thread sleeps while nothing happens on the bus.
        let before = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-nmtest"))
        Thread.sleep(forTimeInterval: 3)
        let after = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-nmtest"))
        XCTAssertLessThanOrEqual(after - before, 1, "the watch woke \(after - before) times in 3 idle seconds")

        watch.stop()
        try networkManager.setMetered(2)
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(heard.all.count, 3, "nothing reported after stop")
    }

    func testWithoutNetworkManagerItSaysSoAndTakesItUpWhenItComesAndGoes() throws {
        let bus = try DBusRig(.system)
        let watch = watch(bus)
        let heard = Heard()
        watch.start(report: heard.append)
        defer { watch.stop() }
        XCTAssertEqual(heard.all, [.unwatched(reason: "NetworkManager is not running on the system bus")])

        let networkManager = try DBusMockRig.networkManager(on: bus, metered: 1)
        // The template gets its Metered after it took its name; the change after is heard.
        try networkManager.setMetered(1)
        try waitUntil("NetworkManager taken up", timeout: 10) { heard.last == global(.yes) }

        networkManager.stop()
        try waitUntil("NetworkManager gone", timeout: 10) {
            heard.last == .unwatched(reason: "NetworkManager left the system bus")
        }
    }

    /// dbus restarted: said once as a lost bus, then NetworkManager on the new bus read and
    /// followed again without a reload.
    func testTheBusRestartedIsSaidAndNetworkManagerReadAgainWhenItIsBack() throws {
        let bus = try DBusRig(.system)
        var networkManager = try DBusMockRig.networkManager(on: bus, metered: 2)
        let watch = watch(bus)
        let heard = Heard()
        watch.start(report: heard.append)
        defer { watch.stop() }
        XCTAssertEqual(heard.last, global(.no))

        try bus.restartDaemon()
        try waitUntil("the lost bus said", timeout: 10) {
            guard case .unwatched(let reason)? = heard.last else { return false }
            return reason.hasPrefix("the system bus connection was lost")
        }
        networkManager = try DBusMockRig.networkManager(on: bus, metered: 1)
        try networkManager.setMetered(1)
        try waitUntil("NetworkManager read again", timeout: 10) { heard.last == global(.yes) }
        try networkManager.setMetered(2)
        try waitUntil("and followed", timeout: 10) { heard.last == global(.no) }
        let lost = heard.all.filter { if case .unwatched = $0 { return true } else { return false } }
        XCTAssertEqual(lost.count, 1, "the loss said once: \(heard.all)")
    }

    func testTheDevicesUnderTheDefaultRouteAreReadWithTheirSSIDAndFollowed() throws {
        let bus = try DBusRig(.system)
        let networkManager = try DBusMockRig.networkManager(on: bus, metered: 4)
        let wifi = try networkManager.addWiFi(interface: "wlan0", ssid: "Ana\u{2019}s iPhone", metered: 4)
        let watch = watch(bus)
        let heard = Heard()
        watch.start(report: heard.append)
        defer { watch.stop() }
        let reading = try XCTUnwrap(heard.last?.reading, "\(heard.all)")
        XCTAssertEqual(reading.carriers, [.init(id: "Ana\u{2019}s iPhone", type: "802-11-wireless",
                                                devices: [.init(interface: "wlan0", metering: .guessNo, ssid: "Ana\u{2019}s iPhone")])])
        XCTAssertNil(reading.tunnel)
        let guessed = MeteredVerdict.decide(reading, meteredNetworks: [])
        XCTAssertEqual(guessed.text, "not metered: NetworkManager guesses no for wlan0")
        XCTAssertEqual(MeteredVerdict.decide(reading, meteredNetworks: ["ana's iphone"]).text,
                       "metered: listed in metered_networks (Ana\u{2019}s iPhone)", "the SSID as a person types it")

        // The device's own Metered changes (the person marked the connection): read again.
        try networkManager.setDeviceMetered(wifi.device, 1)
        try waitUntil("the device's change", timeout: 10) {
            heard.last?.reading?.carriers.first?.devices.first?.metering == .yes
        }
        XCTAssertEqual(MeteredVerdict.decide(try XCTUnwrap(heard.last?.reading), meteredNetworks: []).text,
                       "metered: NetworkManager says yes for wlan0")
    }

    func testAVPNHoldingTheDefaultRouteIsLookedThroughToTheHotspotUnderIt() throws {
        let bus = try DBusRig(.system)
        let networkManager = try DBusMockRig.networkManager(on: bus, metered: 3)
        let wifi = try networkManager.addWiFi(interface: "wlan0", ssid: "Pixel hotspot", metered: 3)
        // The VPN's own metering is NetworkManager's global word now: guess-no.
        try networkManager.addVPN(id: "Office VPN", over: wifi, globalMetered: 4)
        let watch = watch(bus)
        let heard = Heard()
        watch.start(report: heard.append)
        defer { watch.stop() }
        let reading = try XCTUnwrap(heard.last?.reading, "\(heard.all)")
        XCTAssertEqual(reading.global, .guessNo)
        XCTAssertEqual(reading.tunnel, "Office VPN")
        XCTAssertEqual(reading.carriers.map(\.id), ["Pixel hotspot"])
        let verdict = MeteredVerdict.decide(reading, meteredNetworks: [])
        XCTAssertEqual(verdict.text, "metered: NetworkManager guesses yes for wlan0, under Office VPN")
        XCTAssertEqual(verdict.rule, .device)
        XCTAssertEqual(verdict.ssid, "Pixel hotspot")
        XCTAssertEqual(MeteredVerdict.decide(reading, meteredNetworks: ["Office VPN"]).rule, .meteredNetworks,
                       "the VPN's own name may be listed too")
    }

    func testTheRulesDecideListedFirstThenTheDevicesThenNetworkManagersGlobalWord() {
        let phone = MeteredNetworkReading.Connection(id: "Hotspot profile", type: "802-11-wireless",
                                                     devices: [.init(interface: "wlan0", metering: .guessNo, ssid: "Ana\u{2019}s iPhone")])
        let reading = MeteredNetworkReading(watchedBy: "NetworkManager", global: .guessNo, carriers: [phone])
        XCTAssertEqual(MeteredVerdict.decide(reading, meteredNetworks: ["Ana's iPhone"]).reason, "listed in metered_networks (Ana\u{2019}s iPhone)",
                       "by SSID")
        XCTAssertEqual(MeteredVerdict.decide(reading, meteredNetworks: ["hotspot profile"]).reason,
                       "listed in metered_networks (Hotspot profile)", "by connection id")
        let unlisted = MeteredVerdict.decide(reading, meteredNetworks: ["Home"])
        XCTAssertEqual(unlisted.metered, false)
        XCTAssertEqual(unlisted.rule, .device)
        XCTAssertEqual(unlisted.value, "guess-no")

        // Two devices: any metered one decides.
        let docked = MeteredNetworkReading.Connection(id: "Wired", type: "802-3-ethernet",
                                                      devices: [.init(interface: "eth0", metering: .no)])
        let modem = MeteredNetworkReading.Connection(id: "Carrier", type: "gsm", devices: [.init(interface: "wwan0", metering: .yes)])
        XCTAssertEqual(MeteredVerdict.decide(.init(watchedBy: "NetworkManager", global: .no, carriers: [docked, modem]),
                                             meteredNetworks: []).text, "metered: NetworkManager says yes for wwan0")

        // No device says: the global word; nothing known: unknown.
        let unknownDevice = MeteredNetworkReading.Connection(id: "x", type: "802-3-ethernet", devices: [.init(interface: "eth0", metering: .unknown)])
        XCTAssertEqual(MeteredVerdict.decide(.init(watchedBy: "NetworkManager", global: .guessYes, carriers: [unknownDevice]),
                                             meteredNetworks: []).text, "metered: NetworkManager guesses yes")
        let nothing = MeteredVerdict.decide(.init(watchedBy: "NetworkManager", global: .unknown), meteredNetworks: [])
        XCTAssertNil(nothing.metered)
        XCTAssertEqual(nothing.rule, .networkManager)
    }

    func testNoSystemBusIsSaidAndNothingElse() {
        let watch = NetworkManagerMeteredWatch(bus: .address("unix:path=/nonexistent/bus"), logger: Logger(label: "test"))
        let heard = Heard()
        watch.start(report: heard.append)
        watch.stop()
        guard case .unwatched(let reason)? = heard.last, heard.all.count == 1 else { return XCTFail("\(heard.all)") }
        XCTAssertTrue(reason.contains("cannot connect to the bus at unix:path=/nonexistent/bus"), reason)
    }
}
