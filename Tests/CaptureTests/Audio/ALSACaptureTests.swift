import AgentCore
import Capture
import Foundation
import TestRigs
import XCTest

/// Real libasound capture through the ALSA file plugin.
final class ALSACaptureTests: XCTestCase {
    func testReadsTheDeviceSamplesExactly() throws {
        let directory = try TemporaryDirectory()
        let input = try SpeechInput.make(seconds: 10, in: directory.path)
        let rig = try ALSARig(input: input)
        let capture = try ALSACapture(device: rig.device)
        defer { capture.close() }
        XCTAssertEqual(capture.sampleRate, 16_000)
        XCTAssertGreaterThan(capture.periodFrames, 0)
        XCTAssertGreaterThanOrEqual(capture.bufferFrames, capture.periodFrames * 2, "at least two periods in the buffer")
        XCTAssertEqual(capture.periodFrames, ALSACapture.defaultPeriodFrames, "1 s periods asked for")
        XCTAssertEqual(capture.wakeFrames, ALSACapture.defaultWakeFrames, "woken every two periods")
        XCTAssertGreaterThanOrEqual(capture.bufferFrames, capture.wakeFrames * 2, "a wake leaves slack in the buffer")

        let wanted = 5 * 16_000
        var got: [Int16] = []
        let buffer = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 16_000)
        defer { buffer.deallocate() }
        while got.count < wanted {
            guard case .frames(let count) = try capture.read(into: buffer) else { return XCTFail("unexpected read result") }
            got.append(contentsOf: buffer[0 ..< min(count, wanted - got.count)])
        }
        let expected = try SpeechInput.samples(ofRawFile: input).prefix(wanted)
        XCTAssertEqual(got, Array(expected), "the samples read are the file's, in order")
    }

    func testMissingDeviceIsNotFoundWithTheReason() {
        XCTAssertThrowsError(try ALSACapture(device: "ariata_no_such_pcm")) { error in
            guard let error = error as? AudioCaptureError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.kind, .notFound)
            XCTAssertNil(error.code)
            XCTAssertTrue(error.description.contains("ariata_no_such_pcm"), error.description)
            XCTAssertTrue(error.description.contains("No such file or directory"), error.description)
        }
    }

    /// The file plugin opens its `infile` like a device node; a file that refuses reading
    /// gives the same EACCES a microphone node without `audio` group rights does.
    func testPermissionDeniedIsE005WithTheAudioGroupHint() throws {
        let directory = try TemporaryDirectory()
        let unreadable: String
        if getuid() != 0 {
            unreadable = directory.file("unreadable.raw")
            _ = FileManager.default.createFile(atPath: unreadable, contents: Data(count: 64_000))
            chmod(unreadable, 0)
        } else if FileManager.default.fileExists(atPath: "/sys/bus/pci/rescan") {
            // Root reads any plain file; a write-only sysfs attribute refuses even root with EACCES.
            unreadable = "/sys/bus/pci/rescan"
        } else {
            return XCTFail("running as root without /sys/bus/pci/rescan: no file refuses reading; run the tests as a normal user")
        }
        let rig = try ALSARig(input: unreadable)
        XCTAssertThrowsError(try ALSACapture(device: rig.device)) { error in
            guard let error = error as? AudioCaptureError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.kind, .permissionDenied)
            XCTAssertEqual(error.code, .permissionDenied)
            XCTAssertEqual(error.liveness.code, .permissionDenied)
            XCTAssertTrue(error.description.hasPrefix("E005"), error.description)
            XCTAssertTrue(error.description.contains("'audio' group"), error.description)
        }
    }

    func testErrnoMapping() {
        XCTAssertEqual(AudioCaptureError(errno: -EBUSY, device: "d", detail: "").kind, .busy)
        XCTAssertEqual(AudioCaptureError(errno: -ENODEV, device: "d", detail: "").kind, .notFound)
        XCTAssertEqual(AudioCaptureError(errno: -EPERM, device: "d", detail: "").kind, .permissionDenied)
        XCTAssertEqual(AudioCaptureError(errno: -EINVAL, device: "d", detail: "").kind, .failed)
        XCTAssertTrue(AudioCaptureError(errno: -EBUSY, device: "d", detail: "").description.contains("another program"))
    }
}
