import Foundation
import Logging
import TestRigs
import XCTest
@testable import Daemon

/// `DesktopNotifier` against python-dbusmock's notification daemon on a private session
/// bus: the notice is a `Notify` of the freedesktop spec, as "Ariata agent", with its
/// urgency; without a notification server or a bus it says so and goes on.
final class DesktopNotifierTests: XCTestCase {
    func testANoticeIsANotifyCallWithTheAgentsNameAndItsUrgency() throws {
        let bus = try DBusRig(.session)
        let server = try DBusMockRig.notificationDaemon(on: bus)
        let notifier = DesktopNotifier(bus: .address(bus.address), logger: Logger(label: "test"))
        notifier.send(DesktopNotice(key: "storage", summary: "Ariata: the disk is almost full", body: "Free disk space.", urgent: true))
        notifier.send(DesktopNotice(key: "switched-off.location", summary: "Ariata: off", body: "Switch it on."))
        try waitUntil("two notices at the notification server", timeout: 10) { try server.notifications().count == 2 }
        XCTAssertEqual(try server.notifications(), [
            .init(appName: "Ariata agent", summary: "Ariata: the disk is almost full", body: "Free disk space.", urgency: 2),
            .init(appName: "Ariata agent", summary: "Ariata: off", body: "Switch it on.", urgency: 1),
        ])
    }

    func testWithoutANotificationServerOrABusNothingBreaks() throws {
        let bus = try DBusRig(.session)
        let notifier = DesktopNotifier(bus: .address(bus.address), logger: Logger(label: "test"))
        notifier.send(DesktopNotice(key: "token", summary: "s", body: "b"))
        // The server comes later: the next notice reaches it on the same connection.
        let server = try DBusMockRig.notificationDaemon(on: bus)
        notifier.send(DesktopNotice(key: "token", summary: "again", body: "b"))
        try waitUntil("the notice sent once a server is there", timeout: 10) { try server.notifications().count == 1 }
        XCTAssertEqual(try server.notifications().first?.summary, "again")

        let nowhere = DesktopNotifier(bus: .address("unix:path=/nonexistent/bus"), logger: Logger(label: "test"))
        nowhere.send(DesktopNotice(key: "token", summary: "s", body: "b"))
    }
}
