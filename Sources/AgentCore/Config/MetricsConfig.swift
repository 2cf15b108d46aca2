/// `[metrics]`: a Prometheus text file for node_exporter's textfile collector.
public struct MetricsConfig: Sendable, Equatable {
    /// Where the daemon writes the metrics at every health check; nil: no file.
    public var textfile: String?

    public init() {}

    init(_ s: ConfigSection) throws {
        textfile = try s.optionalString("textfile")
        if let textfile {
            guard textfile.hasPrefix("/") else {
                throw s.error("textfile", "\"\(textfile)\" is not an absolute path: give one such as /var/lib/prometheus/node-exporter/ariata-agent.prom")
            }
            // node_exporter's textfile collector reads only *.prom files.
            guard textfile.hasSuffix(".prom") else {
                throw s.error("textfile", "\"\(textfile)\" does not end in .prom: node_exporter's textfile collector reads only *.prom files")
            }
        }
        try s.finish()
    }
}
