import Capture
import Foundation
import TestRigs
import XCTest

/// Which device names open a card, and the refusal to open one a sound server manages:
/// over a copy of /proc's shape (no sound card here), and the sound server detected from
/// the real PipeWire rig's processes and sockets.
final class SoundCardGuardTests: XCTestCase {
    func testTheCardADeviceNameOpens() {
        let cases: [(String, String?)] = [
            ("hw:0", "0"), ("hw:1,0", "1"), ("hw:CARD=Mic,DEV=0", "Mic"), ("plughw:CARD=PCH", "PCH"),
            ("plughw:2", "2"), ("dsnoop:0", "0"), ("sysdefault:CARD=Mic", "Mic"), ("front:1", "1"), ("hw", "0"),
            ("default", nil), ("pipewire", nil), ("pulse", nil), ("null", nil), ("ariata_test_mic", nil), ("dmix:0", nil),
        ]
        for (device, card) in cases {
            XCTAssertEqual(SoundCardGuard.card(of: device), card, device)
        }
    }

    /// A fake /proc: card 0 (id "PCH") and, when `server` is given, a process of that name.
    func procRoot(server: String?) throws -> TemporaryDirectory {
        let root = try TemporaryDirectory("ariata-proc")
        try FileManager.default.createDirectory(atPath: root.file("asound/card0"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root.file("asound/PCH"), withDestinationPath: "card0")
        try FileManager.default.createDirectory(atPath: root.file("1"), withIntermediateDirectories: true)
        try "systemd\n".write(toFile: root.file("1/comm"), atomically: true, encoding: .utf8)
        if let server {
            try FileManager.default.createDirectory(atPath: root.file("4242"), withIntermediateDirectories: true)
            try "\(server)\n".write(toFile: root.file("4242/comm"), atomically: true, encoding: .utf8)
        }
        return root
    }

    func testACardASoundServerManagesIsRefusedWithTheFix() throws {
        let root = try procRoot(server: "pipewire")
        let guardian = SoundCardGuard(procRoot: root.path)
        for device in ["hw:0", "plughw:CARD=PCH,DEV=0", "dsnoop:0"] {
            let refusal = try XCTUnwrap(guardian.refusal(for: device), device)
            XCTAssertEqual(refusal.kind, .managedBySoundServer)
            XCTAssertTrue(refusal.description.contains("card \(device == "plughw:CARD=PCH,DEV=0" ? "PCH" : "0") belongs to PipeWire"), refusal.description)
            XCTAssertTrue(refusal.description.contains("[microphone] device = \"default\""), refusal.description)
            XCTAssertTrue(refusal.description.contains("--user-service"), refusal.description)
        }
        XCTAssertNil(guardian.refusal(for: "default"), "default goes through the sound server")
        XCTAssertNil(guardian.refusal(for: "hw:1"), "no card 1: opening it fails by itself (not found)")
        let pulse = try procRoot(server: "pulseaudio")
        XCTAssertEqual(SoundCardGuard(procRoot: pulse.path).refusal(for: "hw:0")?.kind, .managedBySoundServer)
    }

    func testWithoutASoundServerTheCardIsOpened() throws {
        let root = try procRoot(server: nil)
        XCTAssertNil(SoundCardGuard(procRoot: root.path).refusal(for: "hw:0"), "a board's card is the agent's")
    }

    func testTheRealSessionIsFound() throws {
        let rig: PipeWireRig
        do { rig = try PipeWireRig() } catch let missing as NotInstalled { throw XCTSkip("no PipeWire session can be started here: \(missing)") }
        XCTAssertEqual(SoundCardGuard().runningServer(), .pipewire, "PipeWire's processes in /proc")
        let sessions = SoundServerSession.find(runtimeDirectory: rig.runtimeDirectory.path)
        XCTAssertEqual(sessions.map(\.server), [.pipewire, .pulseaudio], "pipewire-0, and pulse/native of pipewire-pulse")
        let empty = try TemporaryDirectory("ariata-no-session")
        XCTAssertEqual(SoundServerSession.find(runtimeDirectory: empty.path), [])
    }
}
