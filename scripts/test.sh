#!/usr/bin/env bash
# Builds everything (the agent, ariata-test-helper, which the crash tests run as a child
# and kill, the benchmark tool, the tests) and runs the test suite against real
# components: SQLite files, gpsd, ALSA's file plugin, socat ptys and an HTTP receiver on
# 127.0.0.1.
#
# usage: scripts/test.sh [--fast | --soak] [--filter REGEX] [--workers N]
#   (default)  the whole suite, what CI runs: the tests in parallel worker processes, then
#              the few that must run alone (they measure the process's own memory or
#              count its wake-ups)
#   --fast     the everyday tier: the same without the long whole-daemon tests and
#              without the memory tests that run alone
#   --soak     the whole suite with the soaks at full size (a 25-kill storm instead of 10)
#   --filter   only the tests whose "Target.Class/testName" matches REGEX
#   --workers  parallel worker processes (default: five times the cores: most tests wait)
# Tiers, timings and how to run one test: docs/development.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

tier=whole
filter=()
workers=$(( $(nproc) * 5 ))
while [ $# -gt 0 ]; do
  case "$1" in
    --fast) tier=fast ;;
    --soak) tier=soak ;;
    --filter) filter=(--filter "$2"); shift ;;
    --workers) workers=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# Tests that must run alone: the memory tests read their own process's resident set,
# which the other workers' mappings of the same libraries would change; the idle wake-up
# count sees the network changes other tests make (their veth pairs wake the daemon's
# netlink watch).
alone='MemoryFootprintTests|IdleWakeUpTests'
# Tests that bind iroh endpoints (the Virtues box's and the bridge's): run in a network
# namespace of their own with loopback alone, so that nothing they do can leave the machine
# (the iroh library otherwise probes gateways and relays). Run anywhere else they skip.
iroh='BoxOnboardTests|BoxDaemonTests|BoxUploaderTests|IrohBridgeTests'
# The long whole-daemon tests the everyday tier leaves out (each runs the real binary for
# half a minute or more; the whole suite and CI run them).
long='KillStormTests|BoxDaemonTests|ServerReadEndToEndTests|PurgeDaemonTests|MicrophoneFallbackTests|PipeWireCaptureTests/testTheSourceGoingAndComingBack|PrivacyZoneDaemonTests|MutedPlaceDaemonTests|ClockTrustTests|IdleWakeUpTests|PowerDaemonTests|DaemonFullDiskTests|TimedPauseDaemonTests|NetworkReturnTests|ServerSwitchWholeDaemonTests|LongChunkKillTests|SleepWakeDaemonTests|GeoClueDaemonTests|MeteredUploadDaemonTests|DesktopNoticesDaemonTests|BLEHeartRateDaemonTests'

case "$tier" in
  soak) export KILL_STORM_KILLS=${KILL_STORM_KILLS:-25} ;;
  *) export KILL_STORM_KILLS=${KILL_STORM_KILLS:-10} ;;
esac
skip=("--skip" "$alone" "--skip" "$iroh")
iroh_skip=("--skip" "$alone")
if [ "$tier" = fast ]; then skip+=("--skip" "$long"); iroh_skip+=("--skip" "$long"); fi

bash scripts/install-deps.sh
swift build --build-tests

results=$(mktemp -d "${TMPDIR:-/tmp}/ariata-tests.XXXXXX")
at_exit 'rm -rf "$results"'
status=0
# The tests that bind iroh endpoints run beside the others, in a network namespace of
# their own with loopback alone (their output follows the others'). Nothing is built any
# more, so this second `swift test` need not wait for the first one's lock.
iroh_pid=
if [ ${#filter[@]} -eq 0 ] || grep -Eq -- "${filter[1]}" <<<"$iroh"; then
  namespace=(unshare --net)
  [ "$(id -u)" -eq 0 ] || namespace+=(--map-root-user)
  "${namespace[@]}" sh -c 'ip link set lo up && exec "$@"' iroh-tests \
    swift test --skip-build --ignore-lock --parallel --num-workers 2 --filter "${filter[1]:-$iroh}" "${iroh_skip[@]}" \
    --xunit-output "$results/iroh.xml" >"$results/iroh.log" 2>&1 &
  iroh_pid=$!
fi
echo "== tests in $workers parallel worker processes ($tier tier)"
swift test --skip-build --parallel --num-workers "$workers" "${skip[@]}" "${filter[@]}" \
  --xunit-output "$results/parallel.xml" || status=$?
if [ -n "$iroh_pid" ]; then
  wait "$iroh_pid" || status=$?
  echo "== tests that bind iroh endpoints (ran beside the others, in a network namespace with loopback alone)"
  cat "$results/iroh.log"
fi
# One worker: each of these runs with no other test process beside it (not in the
# everyday tier: they are about the daemon's memory, not what one usually changes).
if [ "$tier" != fast ] && { [ ${#filter[@]} -eq 0 ] || grep -Eq -- "${filter[1]}" <<<"$alone"; }; then
  echo "== tests that run alone"
  swift test --skip-build --parallel --num-workers 1 --filter "$alone" \
    --xunit-output "$results/alone.xml" || status=$?
fi
summaries=()
for file in "$results"/*.xml; do [ -s "$file" ] && summaries+=("$file"); done
if [ ${#summaries[@]} -eq 0 ]; then
  echo "test.sh: no test results were written" >&2
  exit 1
fi
python3 scripts/xunit-summary.py "${summaries[@]}" --slowest 15 || status=1
exit "$status"
