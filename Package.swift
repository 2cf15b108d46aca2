// swift-tools-version:6.0
import PackageDescription

/// The release link's scripts that keep the toolchain's read-only constants out of the
/// writable segment (link/readonly-data.ld) and gather the compiler's
/// private functions before the ordered code (private-code.ld). The lld of Swift 6.0
/// (Debian 13's) crashes on the first, so older toolchains link without them
/// (docs/releasing.md).
#if compiler(>=6.3)
let layoutScripts = ["readonly-data.ld", "private-code.ld"].flatMap {
    ["-Xlinker", "-T", "-Xlinker", "\(Context.packageDirectory)/link/\($0)"]
}
#else
let layoutScripts: [String] = []
#endif

/// The iroh library only ariata-iroh-bridge links (the daemon must not load it):
/// libiroh_ffi.so from PyPI iroh==1.2.0, put in .iroh/<arch>/lib by scripts/fetch-iroh.sh.
/// The manifest knows only the building machine's architecture: a cross build names the
/// target's directory, e.g. ARIATA_IROH_LIB_DIR=.iroh/arm64/lib (relative to the package).
#if arch(arm64)
let irohArch = "arm64"
#else
let irohArch = "amd64"
#endif
let irohLibDir = Context.environment["ARIATA_IROH_LIB_DIR"].map {
    $0.hasPrefix("/") ? $0 : "\(Context.packageDirectory)/\($0)"
} ?? "\(Context.packageDirectory)/.iroh/\(irohArch)/lib"
/// Where the bridge looks for the library: beside itself ($ORIGIN: the packages and `make
/// install` put both in one directory) and, in a build tree, in irohLibDir. The packages
/// build with ARIATA_IROH_RPATH=origin, so that no path of the build machine is in the
/// installed program's RUNPATH (scripts/build-deb.sh checks it).
let irohRunpath = Context.environment["ARIATA_IROH_RPATH"] == "origin" ? ["$ORIGIN"] : ["$ORIGIN", irohLibDir]

let package = Package(
    name: "ariata-agent",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ariata-agent", targets: ["ariata-agent"]),
        .executable(name: "ariata-iroh-bridge", targets: ["ariata-iroh-bridge"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
    ],
    targets: [
        // C libraries, one system library target each (module map + pkg-config).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib",
                       providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CGPS", pkgConfig: "libgps",
                       providers: [.apt(["libgps-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa",
                       providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "libopusenc",
                       providers: [.apt(["libopus-dev", "libopusenc-dev"])]),
        // The kernel's rtnetlink headers (the daemon watches routes and addresses); no library.
        .systemLibrary(name: "CNetlink"),
        // glibc's pthread_setname_np (a GNU extension Swift's Glibc module leaves out); no library.
        .systemLibrary(name: "CThread"),
        // libogg: the audio journal's recovery closes a cut-off Ogg file on page boundaries.
        .systemLibrary(name: "COgg", pkgConfig: "ogg",
                       providers: [.apt(["libogg-dev"])]),
        // sd-bus (libsystemd): GeoClue, logind, NetworkManager, desktop notices, BlueZ.
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd",
                       providers: [.apt(["libsystemd-dev"])]),
        // libqrencode: `onboard --link` shows the device id as a QR code in the terminal.
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode",
                       providers: [.apt(["libqrencode-dev"])]),

        // The system primitives, named for what they are and knowing nothing of the agent:
        // threads (NamedThread, Waker, Poll), the kernel's clocks (Monotonic, the boot
        // clock, suspend, WallClock), timers (ReliableTimer and the scheduler seam), durable
        // file writes and disk space, /proc readers.
        .target(name: "Platform", dependencies: ["CThread"]),
        // Virtual time for tests (a scheduler whose clocks a test moves), in a module of its
        // own as swift-nio keeps its EmbeddedEventLoop: the shipped program does not link it.
        .target(name: "PlatformTestSupport", dependencies: ["Platform"], path: "TestSupport/PlatformTestSupport"),
        // The D-Bus seam: one connection per bus on a thread of its own, values, calls,
        // signals and exported objects (docs/dbus.md). Knows no service.
        .target(name: "DBus", dependencies: ["AgentCore", "Platform", "CSystemd"]),
        // The queue, records, config, error codes, time evidence, retries, liveness.
        .target(name: "AgentCore", dependencies: [
            "Platform",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
            "TOMLKit",
        ]),
        // What the agent tells a person or a program about its data, read from the
        // database and the configuration: status (text, JSON, Prometheus) and export (GPX,
        // GeoJSON, CSV, JSON Lines, audio files).
        .target(name: "Reports", dependencies: ["AgentCore", "Platform"]),
        // The three streams: Location/ (gpsd, GeoClue), Audio/ (ALSA, Opus, Ogg, the
        // chunks and their journal), Health/ (sources by kind, parsers, normaliser).
        .target(name: "Capture", dependencies: [
            "AgentCore", "Platform", "DBus", "CGPS", "CALSA", "COpus", "COgg",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Batches, libcurl transport, backoff, circuit breaker, answer rules.
        .target(name: "Upload", dependencies: [
            "AgentCore", "Platform", "CCurl", "CZlib", "CCrypto",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Wiring, the supervisor, sd_notify, service lifecycle; NetworkManager's metering and
        // desktop notices over D-Bus.
        .target(name: "Daemon", dependencies: [
            "AgentCore", "Platform", "Reports", "Capture", "Upload", "DBus", "CNetlink",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ]),
        // What `onboard` and `doctor` do: verify the server, check devices, write the config.
        .target(name: "Setup", dependencies: [
            "AgentCore", "Platform", "Reports", "Upload", "Capture", "DBus", "CQREncode",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "ariata-agent", dependencies: [
            "AgentCore", "Platform", "Reports", "Capture", "Upload", "Daemon", "Setup",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], linkerSettings: [
            // Release builds (the .deb, the demo, the benchmarks) link with lld and place the
            // functions the daemon runs first in the code (hot-code.order, made by
            // scripts/hot-code.sh): about 8 MB less of the program resident; and keep the
            // read-only constants out of the writable segment (readonly-data.ld).
            .unsafeFlags(["-use-ld=lld",
                          "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/link/hot-code.order",
                          "-Xlinker", "--no-warn-symbol-ordering",
                          "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                          "-Xlinker", "--no-export-dynamic"] + layoutScripts, .when(platforms: [.linux], configuration: .release)),
        ]),

        // The way to a Virtues box over iroh (docs: `ariata-iroh-bridge --help`): a program of
        // its own, started for an upload cycle, so that only it loads the iroh library. CIrohFFI
        // and Iroh are generated from the library by scripts/generate-iroh-bindings.sh.
        .systemLibrary(name: "CIrohFFI"),
        .target(name: "Iroh", dependencies: ["CIrohFFI"], swiftSettings: [.swiftLanguageMode(.v5)]),
        .executableTarget(name: "ariata-iroh-bridge", dependencies: ["Iroh"], linkerSettings: [
            // Installed beside the library (/usr/lib/ariata-agent/); built, from .iroh/.
            .unsafeFlags(["-L", irohLibDir] + irohRunpath.flatMap { ["-Xlinker", "-rpath", "-Xlinker", $0] }),
            // Release builds link with lld, as the agent's do: Debian 13's Swift 6.0 links with
            // GNU ld by default, which, given the toolchain's writable .rodata, makes no RELRO
            // segment (lintian: hardening-no-relro).
            .unsafeFlags(["-use-ld=lld"], .when(platforms: [.linux], configuration: .release)),
        ]),

        // Measurements in docs/performance.md: `ariata-bench <name>` (docs/development.md,
        // Benchmarks). Depends on no test-only module.
        .executableTarget(name: "ariata-bench", dependencies: [
            "AgentCore", "Platform", "Reports", "Capture", "Upload", "Daemon", "Rigs",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The real-component rigs the benchmarks and the tests share: child processes, free
        // ports, gpsd + pty, ALSA file plugin, the reference receiver, the whole daemon.
        // Not in any product: the package installs only ariata-agent.
        .target(name: "Rigs", dependencies: ["AgentCore", "Platform"], path: "TestSupport/Rigs"),

        // The rigs only the tests use (network namespaces, small file systems, pexpect,
        // older queues), and Rigs re-exported.
        .target(name: "TestRigs", dependencies: ["AgentCore", "Platform", "PlatformTestSupport", "Rigs", "DBus", "CZlib"], path: "TestSupport/TestRigs"),
        // The tests' child processes (a queue writer to kill, health sources), found beside
        // the test bundle: built with the tests, not installed.
        .executableTarget(name: "ariata-test-helper", dependencies: [
            "AgentCore", "Platform", "Capture",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "TestSupport/TestHelper"),
        .testTarget(name: "PlatformTests", dependencies: ["Platform", "PlatformTestSupport", "TestRigs"]),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "TestRigs"]),
        .testTarget(name: "AgentCoreTests", dependencies: ["AgentCore", "Platform", "TestRigs"]),
        .testTarget(name: "ReportsTests", dependencies: ["Reports", "AgentCore", "Platform", "TestRigs"]),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "AgentCore", "Platform", "PlatformTestSupport", "TestRigs", "DBus", "CGPS", "CALSA", "COpus", "COgg"]),
        .testTarget(name: "UploadTests", dependencies: ["Upload", "AgentCore", "Platform", "Reports", "TestRigs", "CCurl", "CZlib", "CCrypto"]),
        .testTarget(name: "DaemonTests", dependencies: ["Daemon", "AgentCore", "Platform", "Reports", "Upload", "DBus", "TestRigs"]),
        // The `ariata-agent` commands, run as a user would: the built binary as a child
        // process; and its command-line value parsers, in process.
        .testTarget(name: "CLITests", dependencies: ["ariata-agent", "AgentCore", "Platform", "Reports", "Setup", "TestRigs"]),
        // `ariata-bench` run as a user would (its options, help and errors), the rigs'
        // /proc reader, and the hot-code order against the built program's symbols.
        .testTarget(name: "BenchTests", dependencies: ["ariata-bench", "Platform", "TestRigs",
                                                   .product(name: "ArgumentParser", package: "swift-argument-parser")]),
    ]
)
