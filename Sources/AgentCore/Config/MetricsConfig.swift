/// `[metrics]`: a Prometheus text file for node_exporter's textfile collector.
public struct MetricsConfig: Sendable, Equatable {
    /// Where the daemon writes the metrics at every maintenance round; nil: no file.
    public var textfile: String?

    public init() {}

}

extension MetricsConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.optionalString("textfile", \.textfile) { textfile in
            guard textfile.hasPrefix("/") else {
                return "\"\(textfile)\" is not an absolute path: give one such as /var/lib/prometheus/node-exporter/ariata-agent.prom"
            }
            // node_exporter's textfile collector reads only *.prom files.
            guard textfile.hasSuffix(".prom") else {
                return "\"\(textfile)\" does not end in .prom: node_exporter's textfile collector reads only *.prom files"
            }
            return nil
        }]
    }
}
