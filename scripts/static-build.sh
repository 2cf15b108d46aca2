#!/usr/bin/env bash
# Builds products as the Debian package builds them: release, the Swift runtime and
# Foundation linked statically, every function in a section of its own (so that the
# release link can place the functions the daemon runs together: hot-code.order, see
# Package.swift), and Debian's hardening (-z relro -z now). The package, the benchmarks
# and scripts/hot-code.sh all build through here, so what is measured is what is shipped.
#
#   scripts/static-build.sh [--scratch-path DIR] PRODUCT... [-- SWIFT-BUILD-ARGS...]
#   scripts/static-build.sh --show-bin-path [--scratch-path DIR]
#
# The scratch path defaults to .build-static. Extra arguments after `--` go to every
# `swift build` (e.g. --disable-local-rpath, --jobs 2).
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH=.build-static
PRODUCTS=()
EXTRA=()
SHOW=false
while [ $# -gt 0 ]; do
  case "$1" in
    --scratch-path) SCRATCH=$2; shift 2 ;;
    --show-bin-path) SHOW=true; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "static-build.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) PRODUCTS+=("$1"); shift ;;
  esac
done
ARGS=(-c release --static-swift-stdlib --scratch-path "$SCRATCH"
      -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections
      -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now)
if $SHOW; then exec swift build "${ARGS[@]}" ${EXTRA[@]+"${EXTRA[@]}"} --show-bin-path; fi
[ ${#PRODUCTS[@]} -gt 0 ] || { echo "static-build.sh: name a product (ariata-agent, ariata-bench)" >&2; exit 2; }
for product in "${PRODUCTS[@]}"; do
  swift build "${ARGS[@]}" ${EXTRA[@]+"${EXTRA[@]}"} --product "$product"
done
