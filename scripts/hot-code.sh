#!/usr/bin/env bash
# Regenerates link/hot-code.order: the functions the daemon runs, which the
# release link (Package.swift, lld --symbol-ordering-file) places together at the start of
# the program's code.
#
# Why: the program links the Swift runtime, Foundation and ICU statically (about 19 MB of
# code) but runs about 2 MB of it, spread through the whole. Each page it runs is mapped
# with its neighbours (the kernel's fault-around maps 64 KiB around a fault), so scattered
# hot code kept about 12 MB of the program resident; gathered, about 4 MB.
#
# How: `ariata-bench footprint` twice (all three streams live against the real rigs; one
# upload cycle at the start, then again with a cycle every 60 s) and `ariata-bench
# footprint drain` (a backlog drained by `ariata-agent sync`), with the agent run under
# valgrind's callgrind, which records every function that ran. The list is their union,
# by the symbol names the linker sees, in four parts: the functions the daemon runs
# between upload cycles once it runs (after its first STARTUP_SECONDS, default 60, when the
# daemon's trace is dumped with callgrind_control: the streams and the maintenance rounds,
# each of which drops the program's pages), then those the daemon's upload cycles add (the
# second run's less the first's), then those only `sync` ran, then those only the start
# ran. The daemon drops its program's pages at every round
# (docs/decisions/0005-start-up-page-drop.md), and the pages it maps again are those of
# the first part: together, not interleaved with the start's code or the cycle's, which
# comes back for the few seconds of each cycle only. Names that a later change
# renames are ignored by the linker (--no-warn-symbol-ordering): a stale list costs memory,
# never correctness. Regenerate it after changes to what the daemon runs at start or in
# steady state, and quote the footprint before and after.
#
#   scripts/hot-code.sh [--minutes M] [--keep-traces DIR]
#       (default 3; needs valgrind: apt-get install valgrind). --keep-traces copies the
#       callgrind traces to DIR (the daemon's start, its running, sync's): who calls what
#       between cycles, e.g. to find code that should not run there (decision 0005).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh
MINUTES=3
KEEP_TRACES=
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) MINUTES=$2; shift 2 ;;
    --keep-traces) KEEP_TRACES=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "hot-code.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
need_tools "apt-get install valgrind" valgrind

SCRATCH=${HOT_CODE_SCRATCH:-.build-static}
# Built as the package is (function sections: the list orders functions, not files).
bash scripts/static-build.sh --scratch-path "$SCRATCH" ariata-agent ariata-bench
BIN=$(bash scripts/static-build.sh --show-bin-path --scratch-path "$SCRATCH")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ariata-hot-code.XXXXXX")
at_exit 'rm -rf "$WORK"'
# The bench starts the `ariata-agent` beside it: here, a wrapper that runs the daemon and
# `sync` under callgrind. Valgrind 3.19 cannot read the DWARF 5 the toolchain writes, so
# the traced copy has no debug information (its symbols are the same).
cp "$BIN/ariata-bench" "$WORK/ariata-bench"
strip --strip-debug -o "$WORK/agent" "$BIN/ariata-agent"
cat > "$WORK/ariata-agent" <<EOF
#!/bin/sh
case "\$1" in
  run|sync) exec valgrind --tool=callgrind --callgrind-out-file="$WORK/trace.%p" --dump-instr=no \\
              --compress-strings=no --demangle=no --fair-sched=yes "$WORK/agent" "\$@" ;;
  *) exec "$WORK/agent" "\$@" ;;
esac
EOF
chmod +x "$WORK/ariata-agent"

# --shared-libraries: the benchmark would copy the libraries that `ldd` names for the
# agent, and here the agent is a script; which functions run does not depend on it.
# As the user this script runs as (the benchmark's default as root is nobody): the traces go in $WORK.
ME=$(id -un)
# The daemon's trace up to STARTUP_SECONDS after it started is dumped apart (trace.PID.1).
STARTUP_SECONDS=${STARTUP_SECONDS:-60}
# trace_daemon UPLOAD_INTERVAL: the daemon under callgrind for $MINUTES min; sets TRACED_PID.
trace_daemon() {
  "$WORK/ariata-bench" footprint --minutes "$MINUTES" --upload-interval "$1" --shared-libraries --user "$ME" | grep -E "^(window|ariata-agent)" &
  local bench=$! pid=
  for _ in $(seq 1 600); do
    pid=$(pgrep -f "callgrind.*$WORK/agent run" | head -1) && break
    sleep 0.1
  done
  [ -n "$pid" ] || { echo "hot-code.sh: the daemon did not start under callgrind" >&2; exit 1; }
  sleep "$STARTUP_SECONDS"
  callgrind_control --dump=start-up "$pid" >/dev/null
  wait "$bench" || true
  TRACED_PID=$pid
}
echo "== the daemon under callgrind for $MINUTES min (all three streams, one upload cycle at the start)"
trace_daemon 86400
RUN_PID=$TRACED_PID
echo "== the daemon under callgrind for $MINUTES min again, an upload cycle every 60 s"
trace_daemon 60
CYCLE_PID=$TRACED_PID
echo "== a backlog drained by ariata-agent sync under callgrind"
# `drain` takes no --shared-libraries of its own (the parent's takes it), so the rig is
# given an empty directory of private copies instead: the agent here is a script, which
# ldd cannot list.
mkdir "$WORK/no-copies"
ARIATA_BENCH_RIG_LIBRARIES="$WORK/no-copies" "$WORK/ariata-bench" footprint drain --records 300 | grep -E "drained" || true

ls "$WORK"/trace.* >/dev/null 2>&1 || { echo "hot-code.sh: callgrind wrote no trace" >&2; exit 1; }
OUT=link/hot-code.order
{
  echo "# The functions ariata-agent runs, placed first in its code by the release link (lld"
  echo "# --symbol-ordering-file, see Package.swift). Generated by scripts/hot-code.sh; do not edit."
  # callgrind names a function's object on the `ob=` line before it; keep the agent's own,
  # drop addresses without a symbol.
  functions() {
    awk -v agent="$WORK/agent" '/^ob=/ { ob = substr($0, 4) } /^fn=/ { if (ob == agent) print substr($0, 4) }' "$@" \
      | grep -v '^0x' | LC_ALL=C sort -u
  }
  # "$@" minus each of the lists named after it.
  without() {
    local list=$1; shift
    for other in "$@"; do list=$(LC_ALL=C comm -23 <(echo "$list") "$other"); done
    echo "$list" | sed '/^$/d'
  }
  STARTUPS=$(ls "$WORK"/trace."$RUN_PID".1 "$WORK"/trace."$CYCLE_PID".1 2>/dev/null || true)
  functions $(ls "$WORK"/trace."$RUN_PID"* | grep -vx "$WORK/trace.$RUN_PID.1") > "$WORK/running"
  without "$(functions $(ls "$WORK"/trace."$CYCLE_PID"* | grep -vx "$WORK/trace.$CYCLE_PID.1"))" "$WORK/running" > "$WORK/cycle"
  SYNC=$(ls "$WORK"/trace.* | grep -v "trace\.$RUN_PID" | grep -v "trace\.$CYCLE_PID" || true)
  [ -n "$SYNC" ] || { echo "hot-code.sh: ariata-agent sync left no trace" >&2; exit 1; }
  without "$(functions $SYNC)" "$WORK/running" "$WORK/cycle" > "$WORK/sync"
  without "$(functions ${STARTUPS:-/dev/null})" "$WORK/running" "$WORK/cycle" "$WORK/sync" > "$WORK/start-up"
  cat "$WORK/running" "$WORK/cycle" "$WORK/sync" "$WORK/start-up"
} > "$OUT.new"
echo "== running $(wc -l < "$WORK/running"), upload cycle $(wc -l < "$WORK/cycle"), sync only $(wc -l < "$WORK/sync"), start-up only $(wc -l < "$WORK/start-up")"
mv "$OUT.new" "$OUT"
if [ -n "$KEEP_TRACES" ]; then mkdir -p "$KEEP_TRACES" && cp "$WORK"/trace.* "$KEEP_TRACES"/; fi
echo "== $OUT: $(grep -vc '^#' "$OUT") functions"
