import CALSA
import CGPS
import COpus
import XCTest

/// Each C library the capture streams link is imported and called here, so a missing
/// library or header fails the build and this test, not the field.
final class CLibrariesTests: XCTestCase {
    func testLibgpsIsLinked() {
        // gps_errstr maps libgps error numbers to text; API 11 is Debian bookworm's gpsd 3.22.
        XCTAssertGreaterThanOrEqual(GPSD_API_MAJOR_VERSION, 11)
        XCTAssertFalse(String(cString: gps_errstr(-1)).isEmpty)
    }

    func testALSAIsLinked() {
        let version = String(cString: snd_asoundlib_version())
        XCTAssertTrue(version.hasPrefix("1."), version)
        XCTAssertEqual(String(cString: snd_pcm_format_name(SND_PCM_FORMAT_S16_LE)), "S16_LE")
    }

    func testOpusAndLibopusencAreLinked() {
        XCTAssertTrue(String(cString: opus_get_version_string()).contains("libopus"))
        XCTAssertTrue(String(cString: ope_get_version_string()).contains("libopusenc"))
        var error: Int32 = 0
        let encoder = opus_encoder_create(16_000, 1, OPUS_APPLICATION_VOIP, &error)
        XCTAssertEqual(error, OPUS_OK)
        XCTAssertNotNil(encoder)
        opus_encoder_destroy(encoder)
    }
}
