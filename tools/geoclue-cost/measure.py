#!/usr/bin/python3
"""What GeoClue costs a laptop, each way the agent can hold it (docs/laptop.md,
"GeoClue at a laptop's cost"; the figures are in docs/performance.md).

Runs, on a private system bus: a wpa_supplicant (python3-dbusmock, wpa_supplicant.py
here) whose Scan method counts its calls, with three access points in view; a locator
on 127.0.0.1 that answers every geolocate query with a 40 m position; Debian's real
GeoClue with its Wi-Fi source pointed at that locator (its configuration bound over
/etc/geoclue/geoclue.conf in a mount namespace of its own, as the tests' GeoClueRig
does); and the agent's daemon with location only, from GeoClue, as the system service.
After a minute to settle it counts, over --seconds: the Scan calls, the locator's
queries, and the voluntary context switches (wake-ups) of GeoClue's process and of
every thread of the agent's.

    tools/geoclue-cost/measure.py --mode hold --seconds 300
    tools/geoclue-cost/measure.py --mode per-fix --seconds 300

Run as root (unshare -m). --agent names the binary (.build/release/ariata-agent by default).
"""
import argparse, http.server, json, os, shutil, signal, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))


def switches(pid):
    """Voluntary context switches of every thread of pid."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, task)) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def lines(path):
    try:
        with open(path) as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def wait_for(what, condition, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.1)
    sys.exit("timed out waiting for " + what)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["hold", "per-fix"], required=True)
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--settle", type=int, default=60)
    parser.add_argument("--fix-interval", type=int, default=300)
    parser.add_argument("--agent", default=os.path.join(HERE, "..", "..", ".build", "release", "ariata-agent"))
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="geoclue-cost-")
    children = []
    queries = []

    def start(argv, **kw):
        log = open(os.path.join(work, os.path.basename(argv[0]) + ".log"), "ab")
        child = subprocess.Popen(argv, stdout=log, stderr=log, **kw)
        children.append(child)
        return child

    try:
        bus = os.path.join(work, "bus")
        address = "unix:path=" + bus
        with open(os.path.join(work, "bus.conf"), "w") as f:
            f.write("""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>system</type><listen>%s</listen><auth>EXTERNAL</auth>
<policy context="default"><allow user="*"/><allow own="*"/>
<allow send_type="method_call"/><allow send_type="signal"/><allow send_type="method_return"/><allow send_type="error"/>
<allow receive_type="method_call"/><allow receive_type="signal"/><allow receive_type="method_return"/><allow receive_type="error"/>
</policy></busconfig>""" % address)
        start(["dbus-daemon", "--config-file=" + os.path.join(work, "bus.conf"), "--nofork", "--nopidfile"])
        wait_for("the bus", lambda: os.path.exists(bus))
        time.sleep(0.5)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)

        scan_log = os.path.join(work, "scans")
        start(["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", os.path.join(HERE, "wpa_supplicant.py"),
               "--parameters", json.dumps({"scan_log": scan_log})], env=env)

        class Locator(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                queries.append(time.time())
                body = json.dumps({"location": {"lat": 52.5301, "lng": 13.4102}, "accuracy": 40}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Locator)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = "http://127.0.0.1:%d/v1/geolocate" % server.server_port

        conf, section = [], ""
        for line in open("/etc/geoclue/geoclue.conf").read().split("\n"):
            t = line.strip()
            if t.startswith("["):
                section = t
            if section == "[agent]" and t.startswith("whitelist="):
                line = t + ";ariata-agent"
            elif section == "[wifi]" and t.startswith("enable="):
                line = "enable=true\nurl=" + url
            elif section in ("[network-nmea]", "[3g]", "[cdma]", "[modem-gps]", "[compass]") and t.startswith("enable="):
                line = "enable=false"
            conf.append(line)
        with open(os.path.join(work, "geoclue.conf"), "w") as f:
            f.write("\n".join(conf))
        geoclue = start(["unshare", "-m", "sh", "-c", "mount --bind %s /etc/geoclue/geoclue.conf && exec /usr/libexec/geoclue -t 0"
                         % os.path.join(work, "geoclue.conf")], env=env)

        with open(os.path.join(work, "agent.toml"), "w") as f:
            f.write("""[storage]
database = "%s/agent.sqlite"
[location]
source = "geoclue"
geoclue_mode = "%s"
geoclue_fix_interval = %d
[microphone]
enabled = false
[health]
enabled = false
""" % (work, args.mode, args.fix_interval))
        agent = start([args.agent, "run", "--config", os.path.join(work, "agent.toml")],
                      env=dict(env, ARIATA_SERVICE_MODE="system"))
        time.sleep(args.settle)
        if not queries:
            sys.exit("GeoClue never asked the locator: see the logs in " + work)
        # unshare and sh exec in place: the pid started is GeoClue's.
        geoclue_pid = geoclue.pid
        before = (lines(scan_log), len(queries), switches(geoclue_pid), switches(agent.pid))
        time.sleep(args.seconds)
        after = (lines(scan_log), len(queries), switches(geoclue_pid), switches(agent.pid))
        minutes = args.seconds / 60
        result = {name: round((a - b) / minutes, 1) for name, b, a in
                  zip(["scans_per_minute", "locator_queries_per_minute", "geoclue_wakeups_per_minute", "agent_wakeups_per_minute"],
                      before, after)}
        result.update(mode=args.mode, seconds=args.seconds, fix_interval=args.fix_interval)
        print("measured: " + json.dumps(result))
    finally:
        for child in reversed(children):
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
