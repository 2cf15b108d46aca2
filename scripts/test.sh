#!/usr/bin/env bash
# Builds everything (the agent, the benchmark tool the crash tests use as a child, the
# tests) and runs the whole test suite against real components: SQLite files, gpsd,
# ALSA's file plugin, socat ptys and an HTTP receiver on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build --build-tests
swift test --skip-build "$@"
