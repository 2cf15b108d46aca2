# shellcheck shell=bash
# The helpers the scripts share, defined once. Sourced, never run:
#   SCRIPT_NAME=test-deb
#   . "$(dirname "$0")/lib.sh"
# (set on a line of its own: bash keeps `NAME=value . file` only while the file is read)
# SCRIPT_NAME is the name messages carry (default: the script's file name without .sh);
# a test sets DIE_PREFIX="FAIL: " so its failures read as such.

SCRIPT_NAME=${SCRIPT_NAME:-$(basename "$0" .sh)}
DIE_PREFIX=${DIE_PREFIX:-}
LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$LIB_DIR/.." && pwd)

# --- messages --------------------------------------------------------------------------
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
ok() { printf '   ok: %s\n' "$*"; }
die() { printf '%s: %s%s\n' "$SCRIPT_NAME" "$DIE_PREFIX" "$*" >&2; exit 1; }
# Seconds since a `date +%s.%N` reading, to a tenth.
since() { awk -v t0="$1" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }'; }

# need_tools HINT TOOL...: each tool on the PATH, or die naming the hint that installs it.
need_tools() {
  local hint=$1 tool; shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is missing: $hint"
  done
}

# --- clean-up: steps run in reverse order when the script exits, whatever its end ------
EXIT_STEPS=()
at_exit() { EXIT_STEPS+=("$1"); }
run_exit_steps() {
  local rc=$? i
  set +e
  for (( i = ${#EXIT_STEPS[@]} - 1; i >= 0; i-- )); do eval "${EXIT_STEPS[i]}"; done
  exit "$rc"
}
trap run_exit_steps EXIT
trap 'exit 130' INT TERM

# --- a Debian root ---------------------------------------------------------------------
# A command inside ROOT with a clean environment (nothing of the host's leaks in).
ROOT_ENV=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
          LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive)
inroot() {  # inroot ROOT COMMAND...
  local root=$1; shift
  env -i "${ROOT_ENV[@]}" chroot "$root" "$@"
}

# --- waiting ---------------------------------------------------------------------------
wait_until() {  # wait_until SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2; shift 2
  local t0; t0=$(date +%s)
  until "$@" >/dev/null 2>&1; do
    [ $(( $(date +%s) - t0 )) -lt "$limit" ] || die "timed out after $limit s waiting for $what"
    sleep 0.2
  done
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port_open() { python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$1"; }

# --- the rigs the demo and the package test share (the tests' own are TestSupport/Rigs) ----
# The reference receiver on 127.0.0.1, its records in WORK/received.sqlite, its log in
# WORK/receiver.log. Sets RECEIVER_PID and RECEIVER_URL; stopped at exit.
start_receiver() {  # start_receiver WORK PORT TOKEN [RECEIVER-ARGS...]  (PORT 0: any)
  local work=$1 port=$2 token=$3; shift 3
  rm -f "$work/receiver.port"
  python3 "$REPO_ROOT/tools/ingest-receiver/receiver.py" --token "$token" --port "$port" \
    --port-file "$work/receiver.port" --store "$work/received.sqlite" "$@" >>"$work/receiver.log" 2>&1 &
  RECEIVER_PID=$!
  at_exit '[ -n "${RECEIVER_PID:-}" ] && kill "$RECEIVER_PID" 2>/dev/null'
  wait_until 20 "the receiver" test -s "$work/receiver.port"
  RECEIVER_URL="http://127.0.0.1:$(cat "$work/receiver.port")"
}
stop_receiver() { kill "$RECEIVER_PID"; wait "$RECEIVER_PID" 2>/dev/null || true; RECEIVER_PID=""; }

# gpsd on one end of a socat pty pair, fed the demo track (tools/demo/track.csv) at the
# other; inside ROOT (with the root's own gpsd and socat) when one is given. Sets
# GPSD_PORT and GPS_RIG_PIDS; stop_gps_rig stops it, and it is stopped at exit.
GPS_RIG_PIDS=()
start_gps_rig() {  # start_gps_rig WORK [ROOT]
  local work=$1 root=${2:-} run=() dir=$1
  if [ -n "$root" ]; then run=(env -i "${ROOT_ENV[@]}" chroot "$root"); dir=/tmp; fi
  local host_dir=${root:+$root}$dir
  GPSD_PORT=$(free_port)
  at_exit stop_gps_rig
  # exec: $! is then socat or gpsd itself (inside the root too).
  ( exec "${run[@]}" socat pty,raw,echo=0,link="$dir/gps0" pty,raw,echo=0,link="$dir/gps-feed" ) >"$work/socat.log" 2>&1 &
  GPS_RIG_PIDS+=($!)
  wait_until 30 "socat's pty pair" test -e "$host_dir/gps-feed"
  ( exec "${run[@]}" gpsd -N -n -b -S "$GPSD_PORT" -F "$dir/gpsd.sock" "$dir/gps0" ) >"$work/gpsd.log" 2>&1 &
  GPS_RIG_PIDS+=($!)
  python3 "$REPO_ROOT/tools/demo/nmea-feeder.py" "$REPO_ROOT/tools/demo/track.csv" "$host_dir/gps-feed" >"$work/nmea-feeder.log" 2>&1 &
  GPS_RIG_PIDS+=($!)
  wait_until 30 "gpsd on 127.0.0.1:$GPSD_PORT" port_open "$GPSD_PORT"
}
stop_gps_rig() {
  [ ${#GPS_RIG_PIDS[@]} -gt 0 ] || return 0
  kill "${GPS_RIG_PIDS[@]}" 2>/dev/null
  wait "${GPS_RIG_PIDS[@]}" 2>/dev/null || true
  GPS_RIG_PIDS=()
}

# Health samples as JSON Lines, for a file source: the demo's samples
# (tools/demo/health-samples.tsv, one line malformed on purpose) dated back from now, or
# N heart-rate samples of the last N seconds.
health_lines() {  # health_lines demo|N
  python3 - "$1" "$REPO_ROOT/tools/demo/health-samples.tsv" <<'PY'
import datetime, json, sys, time
now = time.time()
stamp = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
if sys.argv[1] == "demo":
    for line in open(sys.argv[2]):
        if line.startswith("#") or not line.strip():
            continue
        ago, text = line.rstrip("\n").split("\t", 1)
        try:
            sample = json.loads(text)
        except ValueError:
            print(text)
            continue
        sample["timestamp"] = stamp(now - float(ago))
        print(json.dumps(sample))
else:
    n = int(sys.argv[1])
    for i in range(n):
        print(json.dumps({"hr": 60 + i, "timestamp": stamp(now - n + i)}))
PY
}
