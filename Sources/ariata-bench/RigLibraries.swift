import Daemon
import Foundation
import Platform

/// Keeps the rig's own processes out of the daemon's resident set (docs/development.md,
/// Benchmarks).
///
/// The daemon drops the library pages it mapped while starting (`MADV_PAGEOUT`), but the
/// kernel leaves a page that another process maps too. On this machine the benchmark
/// itself, the reference receiver (Python: SQLite, OpenSSL) and socat (OpenSSL) map the
/// same library files, so many of the daemon's pages stayed resident because of processes
/// a board does not run. Here those processes, this one included, load private
/// copies of the daemon's libraries (`LD_LIBRARY_PATH`: other files, so other pages), and
/// the daemon is started without it. glibc's own libraries
/// (libc, libm, the loader) are not copied: on a board every process maps them (gpsd,
/// systemd, a shell), so the daemon's figure keeps what they share. `--shared-libraries`
/// runs the rig on the system's libraries, as before.
struct RigLibraries {
    /// Where the copies are; removed by `remove()`.
    let directory: String

    /// The environment variable that tells the re-executed benchmark where its copies are.
    private static let marker = "ARIATA_BENCH_RIG_LIBRARIES"

    /// In a benchmark run as its user started it: copies every library `agent` links
    /// except glibc's into a directory under $TMPDIR and executes this benchmark again with the same
    /// arguments, loading the copies (`LD_LIBRARY_PATH`, read by the loader at the start;
    /// the rig's children inherit it); it does not return. In the benchmark so started:
    /// the copies.
    static func separate(agent: String) throws -> RigLibraries {
        if let given = ProcessInfo.processInfo.environment[marker], !given.isEmpty {
            return RigLibraries(directory: given)
        }
        let linked = try linkedLibraries(of: agent)
        let directory = (NSTemporaryDirectory() as NSString).appendingPathComponent("ariata-bench-libraries-\(getpid())")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var copied = 0
        for path in linked where !glibc.contains(where: { (path as NSString).lastPathComponent.hasPrefix($0) }) {
            let copy = (directory as NSString).appendingPathComponent((path as NSString).lastPathComponent)
            try? FileManager.default.removeItem(atPath: copy)
            // The file the soname's link points to: the copy is a file of its own.
            guard let resolved = realpath(path, nil) else { throw BenchFailure("cannot resolve \(path)") }
            defer { free(resolved) }
            try FileManager.default.copyItem(atPath: String(cString: resolved), toPath: copy)
            copied += 1
        }
        print("the rig's processes on private copies of \(copied) libraries in \(directory) (--shared-libraries: on the system's)")
        fflush(nil)
        setenv(marker, directory, 1)
        setenv("LD_LIBRARY_PATH", directory, 1)
        let arguments = CommandLine.arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", arguments)
        throw BenchFailure("could not execute the benchmark again: \(String(cString: strerror(errno)))")
    }

    /// What the daemon is started with: glibc's loader ignores an empty LD_LIBRARY_PATH,
    /// so the daemon loads the system's libraries.
    static let agentEnvironment = ["LD_LIBRARY_PATH": ""]

    /// Fails when the daemon `pid` mapped one of the copies: then the figures would be
    /// those of a daemon sharing nothing, not the daemon's as installed.
    func checkAgent(pid: Int32) throws {
        guard let maps = MapsLine.read(String(pid)) else { return }
        if maps.contains(where: { $0.path.hasPrefix(directory) }) {
            throw BenchFailure("the agent (pid \(pid)) loaded the rig's copies in \(directory): LD_LIBRARY_PATH reached it")
        }
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// File-name prefixes of glibc's libraries, which stay shared.
    private static let glibc = ["libc.so", "libm.so", "ld-linux", "libpthread.so", "libdl.so", "librt.so"]

    /// The absolute paths `ldd` lists for `binary`.
    static func linkedLibraries(of binary: String) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ldd")
        process.arguments = [binary]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchFailure("ldd \(binary) failed") }
        // "libcurl.so.4 => /lib/x86_64-linux-gnu/libcurl.so.4 (0x...)"
        return String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard let arrow = line.range(of: "=> /") else { return nil }
            return line[line.index(before: arrow.upperBound)...].split(separator: " ").first.map(String.init)
        }
    }
}

/// How much of a process's file-backed resident memory another process maps too, by file
/// (/proc/PID/pagemap against /proc/kpagecount): the part the daemon's start-up drop cannot
/// take. Needs root (the kernel hides page frame numbers from others); nil without.
struct SharedPages {
    var residentKiB = 0
    var sharedKiB = 0
    var byFile: [String: (resident: Int, shared: Int)] = [:]

    init?(pid: Int32) {
        guard let maps = MapsLine.read(String(pid)) else { return nil }
        let pagemap = open("/proc/\(pid)/pagemap", O_RDONLY), counts = open("/proc/kpagecount", O_RDONLY)
        defer { if pagemap >= 0 { close(pagemap) }; if counts >= 0 { close(counts) } }
        guard pagemap >= 0, counts >= 0 else { return nil }
        let page = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        let kib = Int(page / 1024)
        var sawFrame = false
        for mapping in maps where mapping.path.hasPrefix("/") {
            let name = (mapping.path as NSString).lastPathComponent
            let first = UInt64(mapping.start) / page
            for index in 0 ..< UInt64(mapping.end - mapping.start) / page {
                // One 64-bit entry per page: bit 63 resident, bits 0-54 the frame.
                guard let entry = Self.word(pagemap, at: (first + index) * 8), entry >> 63 == 1 else { continue }
                let frame = entry & ((1 << 55) - 1)
                guard frame != 0 else { continue }
                sawFrame = true
                residentKiB += kib
                byFile[name, default: (0, 0)].resident += kib
                if let mappers = Self.word(counts, at: frame * 8), mappers > 1 {
                    sharedKiB += kib
                    byFile[name, default: (0, 0)].shared += kib
                }
            }
        }
        guard sawFrame else { return nil }
    }

    private static func word(_ descriptor: Int32, at offset: UInt64) -> UInt64? {
        var value: UInt64 = 0
        guard let position = off_t(exactly: offset), pread(descriptor, &value, 8, position) == 8 else { return nil }
        return value
    }

    /// "12.3 of 25.6 MB (libc.so.6 1.6 of 1.6, …)": the files with most shared, first.
    func summary(files: Int = 6) -> String {
        let top = byFile.filter { $0.value.shared > 0 }.sorted { $0.value.shared > $1.value.shared }.prefix(files)
        let list = top.map { String(format: "%@ %.1f of %.1f", $0.key, Double($0.value.shared) / 1024, Double($0.value.resident) / 1024) }
        return String(format: "%.1f of %.1f MB", Double(sharedKiB) / 1024, Double(residentKiB) / 1024)
            + (list.isEmpty ? "" : " (" + list.joined(separator: ", ") + ")")
    }
}
