import AgentCore
import Foundation
import XCTest
@testable import Daemon

/// Which desktop notices hold, and which go (docs/laptop.md#desktop-notices): each
/// condition read from what a maintenance round saw, each notice once per episode.
final class DesktopNoticeRulesTests: XCTestCase {
    private let megabyte: Int64 = 1_048_576

    private func seen(free: Int64? = 10_000 * 1_048_576) -> NoticeObservation {
        NoticeObservation(freeDiskBytes: free, queueDirectory: "/home/ada/.local/state/ariata", uploader: .healthy,
                          microphone: (.healthy, "default"), microphoneFallback: "default")
    }

    func testNothingHoldsOnAHealthyLaptop() {
        XCTAssertEqual(NoticeConditions.active(seen()), [])
    }

    func testStorageBelow50MBOrBelowTheFloorIsOneNoticeWithWhereToFreeSpace() throws {
        XCTAssertNil(NoticeConditions.storage(seen(free: 50 * megabyte)), "50 MB is not below 50 MB")
        let low = try XCTUnwrap(NoticeConditions.storage(seen(free: 50 * megabyte - 1)))
        XCTAssertEqual(low.key, "storage")
        XCTAssertTrue(low.body.contains("Only 49 MB free under /home/ada/.local/state/ariata"), low.body)
        XCTAssertTrue(low.body.contains("Free disk space there"), low.body)
        XCTAssertTrue(low.urgent)
        var floor = seen(free: 90 * megabyte)
        floor.belowFloor = true
        let e004 = try XCTUnwrap(NoticeConditions.storage(floor))
        XCTAssertEqual(e004.key, "storage", "one episode whichever of the two it is")
        XCTAssertTrue(e004.body.contains("below the agent's floor of 100 MB ([storage] min_free_mb) (E004)"), e004.body)
    }

    func testARefusedTokenSaysToOnboardAgain() throws {
        var refused = seen()
        refused.uploader = .unhealthy(reason: "the server refused the device token", code: .invalidToken)
        let notice = try XCTUnwrap(NoticeConditions.token(refused))
        XCTAssertTrue(notice.body.hasPrefix("E002: uploads are paused and nothing recorded is lost."), notice.body)
        XCTAssertTrue(notice.body.contains("run 'ariata-agent onboard --user-service' again"), notice.body)
        var outage = seen()
        outage.uploader = .unhealthy(reason: "the endpoint is failing", code: .networkTimeout)
        XCTAssertNil(NoticeConditions.token(outage), "an outage is no token problem")
    }

    func testTheMicrophoneLostWithNoDeviceOpenNeedsTwoChecksAndNamesTheFallback() throws {
        let lost = Liveness.unhealthy(reason: "ALSA capture device 'usb' not found (snd_pcm_open: No such device): plug the microphone in or set [microphone] device to a name from 'arecord -L'; retrying")
        var noFallback = seen()
        noFallback.microphone = (lost, "")
        noFallback.microphoneFallback = nil
        let notice = try XCTUnwrap(NoticeConditions.microphone(noFallback))
        XCTAssertEqual(notice.confirmRounds, 2, "a retry a second later may bring it back by itself")
        XCTAssertTrue(notice.body.contains("plug the microphone in"), notice.body)
        XCTAssertTrue(notice.body.contains("No fallback is set: [microphone] fallback_device"), notice.body)

        var onFallback = seen()
        onFallback.microphone = (.healthy, "default")
        XCTAssertNil(NoticeConditions.microphone(onFallback), "capturing from the fallback is not lost")
        var fullDisk = seen()
        fullDisk.microphone = (.unhealthy(reason: "cannot write chunks", code: .storageFull), "usb")
        XCTAssertNil(NoticeConditions.microphone(fullDisk), "a device that records is not lost")
        var paused = seen()
        paused.microphone = nil
        XCTAssertNil(NoticeConditions.microphone(paused))
    }

    func testEachStreamTheServerSwitchedOffIsItsOwnNoticeAndNothingOnYetIsOne() {
        var off = seen()
        off.switchedOff = [.location: ServerSwitches.switchedOffReason, .health: ServerSwitches.switchedOffReason]
        let notices = NoticeConditions.switchedOff(off)
        XCTAssertEqual(notices.map(\.key), ["switched-off.location", "switched-off.health"])
        XCTAssertTrue(notices[0].body.hasPrefix("Location is not recorded: the server switched it off in its web UI. Switch it on there"),
                      notices[0].body)
        off.configurationComplete = false
        off.switchedOff = [.location: ServerSwitches.notConfiguredReason, .microphone: ServerSwitches.notConfiguredReason]
        let waiting = NoticeConditions.switchedOff(off)
        XCTAssertEqual(waiting.map(\.key), ["switched-off"])
        XCTAssertTrue(waiting[0].body.hasPrefix("The server has no stream switched on for this device yet: turn them on in its web UI"),
                      waiting[0].body)
    }

    func testANoticeGoesOncePerEpisodeAndAgainInTheNextOne() {
        let storage = DesktopNotice(key: "storage", summary: "s", body: "b")
        let microphone = DesktopNotice(key: "microphone", summary: "m", body: "b", confirmRounds: 2)
        var episodes = NoticeEpisodes()
        XCTAssertEqual(episodes.due([storage, microphone]), [storage])
        XCTAssertEqual(episodes.due([storage, microphone]), [microphone], "seen at two checks in a row")
        XCTAssertEqual(episodes.due([storage, microphone]), [], "once per episode")
        XCTAssertEqual(episodes.due([microphone]), [], "the storage episode ended")
        XCTAssertEqual(episodes.due([storage, microphone]), [storage], "a new storage episode")
        XCTAssertEqual(episodes.due([storage]), [])
        XCTAssertEqual(episodes.due([storage, microphone]), [], "one check of the microphone is not enough")
        XCTAssertEqual(episodes.due([storage]), [], "and it cleared before the second")
        var off = episodes
        off.reset()
        XCTAssertEqual(off.due([storage]), [storage], "turned off and on again: a new episode")
    }

    func testNoticesAreOnForTheUserServiceUnlessTheFileSays() throws {
        XCTAssertTrue(NotifyConfig().isOn(as: .user))
        XCTAssertFalse(NotifyConfig().isOn(as: .system), "the system service")
        let off = try AgentConfig(toml: "[notify]\nenabled = false\n", file: "a.toml")
        XCTAssertFalse(off.notify.isOn(as: .user))
        let on = try AgentConfig(toml: "[notify]\nenabled = true\n", file: "b.toml")
        XCTAssertTrue(on.notify.isOn(as: .system))
        XCTAssertNil(try AgentConfig(toml: "", file: "c.toml").notify.enabled)
        XCTAssertThrowsError(try AgentConfig(toml: "[notify]\nenabled = \"yes\"\n", file: "d.toml")) { error in
            XCTAssertTrue("\(error)".contains("notify.enabled: expected true or false"), "\(error)")
        }
    }
}
