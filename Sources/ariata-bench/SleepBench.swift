import AgentCore
import Foundation
import Platform
import Rigs

/// How long the daemon takes from logind's `PrepareForSleep(true)` to releasing its delay
/// lock (logind suspends at the latest `InhibitDelayMaxSec`, 5 s, after the signal), in the
/// worst case: an audio chunk nearly full when sleep comes, on a slow disk. The disk is
/// made slow by strace's fault injection, which holds every fsync and fdatasync of the
/// daemon for `fsyncMilliseconds` (an SD card's fsync). The whole daemon runs with all
/// three streams against the real rigs; logind is python-dbusmock's on a private bus.
enum SleepBench {
    static func run(chunkSeconds: Int, fsyncMilliseconds: Int) throws {
        let bus = try DBusRig(.system)
        let logind = try DBusMockRig.logind(on: bus)
        let rig = try DaemonRig(chunkSeconds: chunkSeconds, uploadInterval: 600)
        let delay = "delay_exit=\(fsyncMilliseconds * 1000)"
        let launcher = fsyncMilliseconds > 0
            ? ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync,fdatasync",
               "-e", "inject=fsync:\(delay)", "-e", "inject=fdatasync:\(delay)"]
            : []
        try rig.startAgent(environment: bus.environment, launcher: launcher)
        defer {
            // Under strace the agent is strace's child: it is stopped itself, or it would
            // outlive strace (which detaches on SIGTERM).
            if let tracer = rig.agent?.pid { stopChildren(of: tracer) }
            _ = rig.stopAgent()
        }
        try waitUntil("the agent to hold logind's sleep delay lock", timeout: 60) { try logind.holdsSleepDelay() }
        try waitUntil("the first full chunk", timeout: Double(chunkSeconds) + 60) { try chunkCount(rig) >= 1 }
        // Sleep comes 2 s before the second chunk would be full.
        Thread.sleep(forTimeInterval: Double(max(chunkSeconds - 2, 1)))
        let before = try chunkCount(rig)
        let sleepAt = try logind.prepareForSleep(true)
        try waitUntil("the lock to be released", timeout: 60, interval: 0.01) { try !logind.holdsSleepDelay() }
        let released = Monotonic.now - sleepAt
        let written = try chunkCount(rig) - before
        print(String(format: "measured: lock released %.2f s after PrepareForSleep(true), with a %d s chunk about %d s full, "
                     + "every fsync held %d ms; %d chunk written before the release (logind's limit: 5 s)",
                     released, chunkSeconds, max(chunkSeconds - 2, 1), fsyncMilliseconds, written))
        try logind.prepareForSleep(false)
    }

    private static func stopChildren(of pid: Int32) {
        let list = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        let children = list.split(separator: " ").compactMap { Int32($0) }
        for child in children { kill(child, SIGTERM) }
        for child in children {
            for _ in 0..<300 where kill(child, 0) == 0 { Thread.sleep(forTimeInterval: 0.1) }
        }
    }

    private static func chunkCount(_ rig: DaemonRig) throws -> Int {
        try rig.openDatabase().recordQueue.records(stream: .microphone).count
    }
}
