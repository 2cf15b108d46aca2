import AgentCore
import Foundation

/// The location stream as a file other tools open: GPX 1.1 (a track: map apps, GPS
/// editors, gpsbabel), GeoJSON (a FeatureCollection of points: GIS tools, web maps) or
/// JSON Lines (each record as the server receives it).
public enum LocationFormat: String, CaseIterable, Sendable {
    case gpx, geojson, jsonl
}

public struct LocationExport {
    public let format: LocationFormat
    public let deviceName: String

    public init(format: LocationFormat, deviceName: String) {
        self.format = format
        self.deviceName = deviceName
    }

    /// Writes every fix of `queue` in the range; returns how many.
    @discardableResult
    public func write(from database: AgentDatabase, since: Date?, until: Date?, to out: ExportOutput) throws -> Int {
        var count = 0
        try header(out)
        try database.recordQueue.forEachRecord(stream: .location, since: since, until: until) { record in
            guard let fix = ExportPayload.object(record.payload),
                  let latitude = ExportPayload.number(fix["latitude"]),
                  let longitude = ExportPayload.number(fix["longitude"]) else { return }
            try point(fix, latitude: latitude, longitude: longitude, raw: record.payload, first: count == 0, to: out)
            count += 1
        }
        try footer(out)
        try out.finish()
        return count
    }

    private func header(_ out: ExportOutput) throws {
        switch format {
        case .gpx:
            try out.write("""
                <?xml version="1.0" encoding="UTF-8"?>
                <gpx version="1.1" creator="ariata-agent \(Self.xml(AgentVersion.string))" \
                xmlns="http://www.topografix.com/GPX/1/1" \
                xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
                xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd">
                  <metadata><name>\(Self.xml(deviceName)) location</name><time>\(RFC3339.string(from: Date()))</time></metadata>
                  <trk><name>\(Self.xml(deviceName))</name><src>gpsd via ariata-agent</src><trkseg>

                """)
        case .geojson:
            try out.write("{\"type\":\"FeatureCollection\",\"features\":[\n")
        case .jsonl:
            break
        }
    }

    private func footer(_ out: ExportOutput) throws {
        switch format {
        case .gpx: try out.write("  </trkseg></trk>\n</gpx>\n")
        case .geojson: try out.write("\n]}\n")
        case .jsonl: break
        }
    }

    private func point(_ fix: [String: Any], latitude: Double, longitude: Double, raw: Data, first: Bool,
                       to out: ExportOutput) throws {
        switch format {
        case .jsonl:
            try out.write(raw)
            try out.write("\n")
        case .geojson:
            var coordinates = [longitude, latitude]
            if let altitude = ExportPayload.number(fix["altitude"]) { coordinates.append(altitude) }
            var properties = fix
            properties["latitude"] = nil
            properties["longitude"] = nil
            let feature: [String: Any] = ["type": "Feature",
                                          "geometry": ["type": "Point", "coordinates": coordinates],
                                          "properties": properties]
            let data = try JSONSerialization.data(withJSONObject: feature, options: [.sortedKeys, .withoutEscapingSlashes])
            try out.write(first ? "" : ",\n")
            try out.write(data)
        case .gpx:
            // wptType's children in the order GPX 1.1 requires: ele, time, ..., src, ...,
            // fix, sat, hdop, ...; speed and course have no element in 1.1 (they were
            // dropped from 1.0), so they go in Garmin's TrackPointExtension, which GPX
            // readers commonly know.
            // GPX's longitude is -180 <= lon < 180: a fix coarsened up to 180 is -180.
            let lon = longitude >= 180 ? longitude - 360 : longitude
            var line = "    <trkpt lat=\"\(Self.decimal(latitude))\" lon=\"\(Self.decimal(lon))\">"
            if let altitude = ExportPayload.number(fix["altitude"]) { line += "<ele>\(Self.decimal(altitude))</ele>" }
            if let time = fix["timestamp"] as? String { line += "<time>\(Self.xml(time))</time>" }
            if let mode = ExportPayload.number(fix["fix_mode"]), mode == 2 || mode == 3 { line += "<fix>\(Int(mode))d</fix>" }
            if let satellites = ExportPayload.number(fix["satellites_used"]), satellites >= 0 { line += "<sat>\(Int(satellites))</sat>" }
            let speed = ExportPayload.number(fix["speed"]), course = ExportPayload.number(fix["course"])
            if speed != nil || course != nil {
                line += "<extensions><gpxtpx:TrackPointExtension xmlns:gpxtpx=\"http://www.garmin.com/xmlschemas/TrackPointExtension/v2\">"
                if let speed { line += "<gpxtpx:speed>\(Self.decimal(speed))</gpxtpx:speed>" }
                if let course { line += "<gpxtpx:course>\(Self.decimal(course))</gpxtpx:course>" }
                line += "</gpxtpx:TrackPointExtension></extensions>"
            }
            try out.write(line + "</trkpt>\n")
        }
    }

    /// Plain decimal notation (xsd:decimal has no exponent), as many digits as the value has.
    static func decimal(_ value: Double) -> String {
        var text = String(format: "%.9f", value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text == "-0" ? "0" : text
    }

    static func xml(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
