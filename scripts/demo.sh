#!/usr/bin/env bash
# The built-in demo: builds ariata-agent and runs its main job, `ariata-agent run`, on a
# machine with no sensors. Everything is real except the sensors' input:
#   - a real gpsd, fed a bundled track (tools/demo/track.csv) as NMEA through a socat pty,
#   - real ALSA capture through the `file` plugin, fed a bundled recording
#     (tools/demo/speech.opus) at real-time pace through a FIFO,
#   - a health file with bundled samples (tools/demo/health-samples.tsv),
#   - the reference ingest receiver (tools/ingest-receiver/receiver.py) as the server.
# All on 127.0.0.1, in a temporary directory that is removed at the end.
#
# usage: scripts/demo.sh [SECONDS]     (how long the daemon runs; default 75)
#   DEMO_CONFIGURATION=release DEMO_UPLOAD_INTERVAL=300 scripts/demo.sh 600
#   measures the daemon's steady-state cost with the default upload interval (the figures
#   are printed at the end of every run).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh
SECONDS_TO_RUN=${1:-75}
UPLOAD_INTERVAL=${DEMO_UPLOAD_INTERVAL:-20}
BUILD=${DEMO_CONFIGURATION:-debug}   # release for measurements

say "installing what the demo needs (Debian packages; idempotent)"
bash scripts/install-deps.sh

say "building ariata-agent"
swift build -c "$BUILD" --product ariata-agent
BIN="$ROOT/.build/$BUILD/ariata-agent"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ariata-demo.XXXXXX")
at_exit 'rm -rf "$WORK"'
at_exit 'wait 2>/dev/null'

say "starting the reference ingest receiver on 127.0.0.1"
TOKEN="demo-token-$(date +%s)"
# The server's web UI would show this short code for a new device; onboarding exchanges
# it for the token, as a user pairing a device does.
PAIRING_CODE="DEMO$(( RANDOM % 90 + 10 ))"
start_receiver "$WORK" 0 "$TOKEN" --pairing-code "$PAIRING_CODE"
RECEIVER=$RECEIVER_URL
echo "receiver at $RECEIVER"

say "starting gpsd on a pty, fed the bundled track"
start_gps_rig "$WORK"
echo "gpsd on 127.0.0.1:$GPSD_PORT"

say "setting up ALSA capture from the bundled recording"
opusdec --quiet --rate 16000 tools/demo/speech.opus "$WORK/speech.wav"
sox "$WORK/speech.wav" -t raw -r 16000 -c 1 -b 16 -e signed-integer "$WORK/speech.raw"
mkfifo "$WORK/mic.fifo"
cat > "$WORK/asound.conf" <<CONF
</usr/share/alsa/alsa.conf>
pcm.demo_mic {
    type file
    slave.pcm "null"
    file "/dev/null"
    infile "$WORK/mic.fifo"
    format "raw"
}
CONF
export ALSA_CONFIG_PATH="$WORK/asound.conf"
python3 tools/demo/pcm-feeder.py "$WORK/speech.raw" "$WORK/mic.fifo" &
at_exit "kill $! 2>/dev/null"

say "writing a health file with the bundled samples"
health_lines demo > "$WORK/health.jsonl"
wc -l < "$WORK/health.jsonl" | xargs echo "samples:"

say "configuring the streams, then onboarding ('ariata-agent onboard --yes')"
CONFIG="$WORK/agent.toml"
cat > "$CONFIG" <<CONF
[storage]
database = "$WORK/agent.sqlite"

[upload]
interval = $UPLOAD_INTERVAL

[location]
gpsd_host = "127.0.0.1"
gpsd_port = $GPSD_PORT
interval = 10

[microphone]
device = "demo_mic"

[health]
enabled = true
commit_interval = 10

[[health.source]]
kind = "file"
path = "$WORK/health.jsonl"
format = "jsonl"
name = "demo-watch"
backfill_days = 1

[daemon]
# The demo may run in a container or VM whose kernel is not disciplined by NTP (its clock
# is the host's): without this, audio would be held until the kernel says the clock is
# synchronised (docs/time.md). A real device leaves it false.
trust_system_clock = true
CONF
# Pairs with the code (the server hands over the device token), verifies the ingest
# endpoint, runs the device checks, keeps the stream settings above, adds a device id and
# changes only those keys of the file (mode 0600).
"$BIN" onboard --config "$CONFIG" --endpoint "$RECEIVER" --code "$PAIRING_CODE" --device-name "ariata-agent demo" --yes

# Pairing switches no stream on (onboard said so): the person turns them on in the
# server's web UI; the receiver's control API plays that page.
say "switching the three streams on, as a person does in the server's web UI"
python3 - "$RECEIVER" <<'PY'
import json, sys, urllib.request
body = json.dumps({name: {"is_enabled": True} for name in ("location", "microphone", "healthkit")}).encode()
urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/_control/verify", data=body, method="POST"), timeout=10).read()
print("location, microphone and healthkit switched on")
PY

say "running 'ariata-agent run' for $SECONDS_TO_RUN s (uploads every $UPLOAD_INTERVAL s)"
# Started through a small launcher that waits for it and writes its rusage: only
# getrusage counts the context switches of threads that have exited (/proc/PID/status is
# the main thread's, and summing /proc/PID/task/* loses the exited ones).
python3 -c '
import os, signal, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[3], sys.argv[3:])
open(sys.argv[1], "w").write(str(pid))
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, lambda number, frame: os.kill(pid, number))
_, status, usage = os.wait4(pid, 0)
open(sys.argv[2], "w").write(f"{usage.ru_nvcsw}\n")
sys.exit(os.waitstatus_to_exitcode(status))
' "$WORK/agent.pid" "$WORK/agent.rusage" "$BIN" run --config "$CONFIG" &
LAUNCHER=$!
at_exit "kill $LAUNCHER 2>/dev/null"
until [ -s "$WORK/agent.pid" ]; do sleep 0.1; done
AGENT=$(cat "$WORK/agent.pid")
START=$(date +%s.%N)
# The daemon's own cost: CPU time between 5 s after start (start-up excluded) and the end
# of the run, and its peak RSS; its voluntary context switches over its whole life (all
# threads, exited ones included: getrusage when it has exited), start-up and stop included.
cpu_ticks() {
  local stat; stat=$(cat "/proc/$AGENT/stat")
  stat=${stat##*) }
  set -- $stat
  echo "$(( ${12} + ${13} ))"
}
sleep 5
CPU0=$(cpu_ticks); T0=$(date +%s.%N)
sleep "$(( SECONDS_TO_RUN > 5 ? SECONDS_TO_RUN - 5 : 1 ))"
CPU1=$(cpu_ticks); T1=$(date +%s.%N)
HWM=$(awk '/^VmHWM/ {print $2}' "/proc/$AGENT/status")
say "stopping the agent with SIGTERM (it writes the audio chunk in progress)"
STOP0=$(date +%s.%N)
kill -TERM "$LAUNCHER"
wait "$LAUNCHER" && echo "the agent exited with status 0 after $(python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.2f}')" "$STOP0") s"
COST=$(python3 -c "import os,sys,time; c0,c1,t0,t1,h,start,v=map(float,sys.argv[1:]); hz=os.sysconf('SC_CLK_TCK'); w=t1-t0; life=time.time()-start; print(f'over {w:.0f} s: CPU {100*(c1-c0)/hz/w:.2f} % of one core, peak RSS {h/1024:.1f} MB; over its whole {life:.0f} s (start-up and stop included): {v/life:.1f} voluntary context switches/s')" "$CPU0" "$CPU1" "$T0" "$T1" "$HWM" "$START" "$(cat "$WORK/agent.rusage")")

say "uploading what is left ('ariata-agent sync')"
"$BIN" sync --config "$CONFIG" || true

say "ariata-agent status"
"$BIN" status --config "$CONFIG" || true

say "what the receiver stored"
python3 - "$WORK/received.sqlite" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for stream, n in db.execute("SELECT stream, COUNT(*) FROM records GROUP BY stream ORDER BY stream"):
    print(f"{stream:<11} {n} records")
row = db.execute("SELECT record FROM records WHERE stream = 'location' ORDER BY rowid DESC LIMIT 1").fetchone()
if row:
    r = json.loads(row[0])
    print("last location:", {k: r[k] for k in ("timestamp", "latitude", "longitude", "speed", "horizontal_accuracy") if k in r})
for (text,) in db.execute("SELECT record FROM records WHERE stream = 'microphone' ORDER BY rowid"):
    r = json.loads(text)
    print(f"audio chunk: {r['timestamp_start']} .. {r['timestamp_end']}  {r['duration']:.1f} s, "
          f"{len(r['audio_data']) * 3 // 4} bytes of Ogg Opus")
kinds = db.execute("SELECT json_extract(record, '$.metric_type'), COUNT(*) FROM records WHERE stream = 'healthkit' GROUP BY 1").fetchall()
if kinds:
    print("health:", ", ".join(f"{k} {n}" for k, n in kinds))
PY
say "what the server can show (the receiver's model of both servers' transforms)"
python3 - "$RECEIVER" <<'PY'
import json, sys, urllib.request
report = json.load(urllib.request.urlopen(sys.argv[1] + "/_control/readable"))["readable"]
labels = {"location": "location", "microphone": "audio", "healthkit": "health"}
for generation in ("ariata", "virtues"):
    counts = report[generation]
    print(f"what the server can show ({generation}): "
          + ", ".join(f"{labels[s]} {counts[s]['read']}/{counts[s]['received']}" for s in labels))
archived = report["archived_only"]["healthkit"]
if archived:
    print(f"health samples no transform reads yet (archived raw by both): {archived}")
PY
say "the daemon's cost, all three streams live"
echo "$COST"
say "done; cleaning up $WORK"
