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


def thread_switches(pid):
    """Voluntary context switches of each thread of pid, by thread id."""
    counts = {}
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, task)) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        counts[task] = int(line.split()[1])
        except FileNotFoundError:
            pass
    return counts


class WakeUps:
    """Wake-ups (voluntary context switches) of a process's threads, counted from now:
    sampled every 0.2 s so that threads that come and go (GLib's worker threads) are
    counted up to their last sample."""

    def __init__(self, pid):
        self.pid, self.start, self.last = pid, thread_switches(pid), {}
        self.last = dict(self.start)
        self.names = {}

    def sample(self):
        counts = thread_switches(self.pid)
        self.last.update(counts)
        for tid in counts:
            if tid not in self.names:
                try:
                    with open("/proc/%d/task/%s/comm" % (self.pid, tid)) as f:
                        self.names[tid] = f.read().strip()
                except FileNotFoundError:
                    pass

    def total(self):
        return sum(count - self.start.get(tid, 0) for tid, count in self.last.items())

    def by_thread(self):
        """The same by thread name (threads of one name added up), the busiest first."""
        names = {}
        for tid, count in self.last.items():
            name = self.names.get(tid, "?")
            names[name] = names.get(name, 0) + count - self.start.get(tid, 0)
        return dict(sorted(((n, c) for n, c in names.items() if c), key=lambda item: -item[1]))


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
        # NetworkManager and logind, as on a laptop (and as IdleWakeUpTests has them): the
        # daemon's watches of them are connected and idle.
        for template in ("networkmanager", "logind"):
            start(["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", template], env=env)
        # GeoClue reads wpa_supplicant's interfaces once, at its start: the mock must be there.
        wait_for("wpa_supplicant on the bus", lambda: b"fi.w1.wpa_supplicant1" in subprocess.run(
            ["busctl", "--address=" + address, "list", "--no-legend", "--acquired"], capture_output=True).stdout)

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

        port_file = os.path.join(work, "receiver.port")
        start(["/usr/bin/python3", os.path.join(HERE, "..", "ingest-receiver", "receiver.py"), "--token", "measure",
               "--port-file", port_file])
        wait_for("the receiver", lambda: os.path.exists(port_file) and open(port_file).read().strip())
        receiver_port = int(open(port_file).read())
        with open(os.path.join(work, "agent.toml"), "w") as f:
            # The reference receiver takes the start's upload; the next waits out the hour.
            f.write("""[server]
endpoint = "http://127.0.0.1:%d"
token = "measure"
device_id = "geoclue-cost"
[upload]
interval = 3600
[storage]
database = "%s/agent.sqlite"
[location]
source = "geoclue"
geoclue_mode = "%s"
geoclue_fix_interval = %d
[microphone]
enabled = false
[health]
enabled = false
""" % (receiver_port, work, args.mode, args.fix_interval))
        agent = start([args.agent, "run", "--config", os.path.join(work, "agent.toml")],
                      env=dict(env, ARIATA_SERVICE_MODE="system"))
        time.sleep(args.settle)
        if not queries:
            sys.exit("GeoClue never asked the locator: see the logs in " + work)
        # unshare and sh exec in place: the pid started is GeoClue's.
        geoclue_pid = geoclue.pid
        scans, asked = lines(scan_log), len(queries)
        geoclue_wakeups, agent_wakeups = WakeUps(geoclue_pid), WakeUps(agent.pid)
        deadline = time.time() + args.seconds
        while time.time() < deadline:
            time.sleep(0.2)
            geoclue_wakeups.sample()
            agent_wakeups.sample()
        counted = (lines(scan_log) - scans, len(queries) - asked, geoclue_wakeups.total(), agent_wakeups.total())
        minutes = args.seconds / 60
        result = {name: round(count / minutes, 1) for name, count in
                  zip(["scans_per_minute", "locator_queries_per_minute", "geoclue_wakeups_per_minute", "agent_wakeups_per_minute"],
                      counted)}
        # The agent's own GeoClue work: the location thread and the GeoClue sessions' bus threads.
        location = sum(c for name, c in agent_wakeups.by_thread().items() if name in ("ariata-location", "ariata-geoclue"))
        result["agent_location_wakeups_per_minute"] = round(location / minutes, 1)
        result.update(mode=args.mode, seconds=args.seconds, fix_interval=args.fix_interval,
                      agent_threads=agent_wakeups.by_thread(), geoclue_threads=geoclue_wakeups.by_thread())
        print("measured: " + json.dumps(result))
        if not os.environ.get("KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    finally:
        for child in reversed(children):
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()


if __name__ == "__main__":
    main()
