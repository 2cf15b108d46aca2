import AgentCore
import Foundation
import Upload

/// Proves a Virtues box's pairing the way uploads will use it: the iroh bridge started
/// with the device's key, connected to the box by its reach ticket, and one request over
/// it (`GET /api/devices/applet-ids`, which only a device on the box's allowlist gets
/// an answer to). Onboarding's last step before writing, and one of `doctor`'s checks.
struct BoxVerifier {
    let server: ServerConfig
    let box: BoxConfig
    let timeout: Int?

    struct Result {
        var check: DeviceCheck
        /// How the box was reached (`direct`, `relay`), when it was.
        var path: String?
        /// The box's build from its answer's header.
        var identity: ServerIdentity?
    }

    func verify() -> Result {
        var settings = ServerSettings(server, box: box)
        if let timeout {
            settings.requestTimeout = timeout
            settings.connectTimeout = min(settings.connectTimeout, timeout)
        }
        let place = Self.describeReach(box)
        let transport: BoxTransport
        do {
            transport = try BoxTransport(settings: settings)
        } catch let failure as TransportFailure {
            return Result(check: Self.failed(failure, place: place))
        } catch {
            return Result(check: DeviceCheck(name: "box over iroh", outcome: .failed, detail: "\(error)"))
        }
        let answer = transport.send(.get(url: BoxConfig.url(path: BoxAnswer.appletIDsPath), headers: []))
        let path = transport.bridge.path
        transport.bridge.stop()
        switch answer {
        case .failure(let failure):
            return Result(check: Self.failed(failure, place: place), path: path)
        case .success(let response):
            let identity = response.headers[ServerIdentity.boxBuildHeader].flatMap { ServerIdentity.box(buildHeader: $0, at: Date()) }
            guard (200..<300).contains(response.status) else {
                let pairAgain = [401, 403].contains(response.status)
                return Result(check: DeviceCheck(name: "box over iroh", outcome: .failed,
                                                 detail: "reached \(place) (\(path)), but it answered HTTP \(response.status) to \(BoxAnswer.appletIDsPath)",
                                                 fix: pairAgain ? BoxAnswer.pairAgain : "check the box's logs"), path: path, identity: identity)
            }
            var detail = "reached \(place) \(BoxReach(path: path, answeredAt: Date()).pathDescription); it knows this device"
            if let applet = BoxAnswer.ingestApplet(in: response.body) {
                detail += applet == box.appletID ? " (ingest applet \(applet))" : "; its ingest applet is now \(applet) (the daemon follows it)"
            }
            return Result(check: DeviceCheck(name: "box over iroh", outcome: .ok, detail: detail), path: path, identity: identity)
        }
    }

    static func describeReach(_ box: BoxConfig) -> String {
        var ways = box.directAddresses
        if let relay = box.relayURL { ways.append("relay \(relay)") }
        return "the box (\(ways.isEmpty ? "no address" : ways.joined(separator: ", ")))"
    }

    static func failed(_ failure: TransportFailure, place: String) -> DeviceCheck {
        switch failure.kind {
        case .notAllowlisted:
            return DeviceCheck(name: "box over iroh", outcome: .failed, detail: failure.description, fix: BoxAnswer.pairAgain)
        case .cannotConnect, .timedOut, .connectionLost:
            return DeviceCheck(name: "box over iroh", outcome: .failed, detail: "cannot reach \(place) over iroh: \(failure.detail)",
                               fix: "check that the box runs and that this machine reaches it: UDP to the box's port 51820 on the LAN, or its relay over HTTPS; the daemon keeps retrying and loses nothing")
        default:
            return DeviceCheck(name: "box over iroh", outcome: .failed, detail: failure.description,
                               fix: "reinstall the ariata-agent package (it carries ariata-iroh-bridge and its library)")
        }
    }
}
