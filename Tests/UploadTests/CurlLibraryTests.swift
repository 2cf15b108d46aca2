import CCurl
import XCTest

/// libcurl is imported and called here, so a missing library fails the build and this test.
final class CurlLibraryTests: XCTestCase {
    func testLibcurlIsLinkedWithTLS() throws {
        // CURLVERSION_NOW is a macro Swift cannot see; by curl's definition it is the one before LAST.
        let info = try XCTUnwrap(curl_version_info(CURLversion(rawValue: UInt32(CURLVERSION_LAST.rawValue - 1))))
        let version = String(cString: info.pointee.version)
        XCTAssertTrue(version.hasPrefix("7.") || version.hasPrefix("8."), version)
        XCTAssertNotNil(info.pointee.ssl_version, "libcurl must be built with TLS")
        let handle = curl_easy_init()
        XCTAssertNotNil(handle)
        XCTAssertEqual(ariata_curl_setopt_long(handle, CURLOPT_TIMEOUT, 30), CURLE_OK)
        curl_easy_cleanup(handle)
    }
}
