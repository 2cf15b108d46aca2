#!/usr/bin/env bash
# Checks link/hot-code.order (made by scripts/hot-code.sh) against a built
# ariata-agent: reports the share of its names that are functions of the program (a list
# gone stale after renames: regenerate it before a release; it fails on that only when
# given --min-found, so that a rename never fails a build or a test) and, for a release
# build, fails when the listed functions
# reach past 60 % of the code (the release link did not use the ordering), when ICU's
# data (the largest of the toolchain's constants) lies in a writable section (the release
# link did not use readonly-data.ld, and the service user could not drop its pages), or
# when the compiler's private functions are not gathered before the ordered code (it did
# not use private-code.ld). See
# docs/development.md, "The hot-code order", and docs/decisions/0005-start-up-page-drop.md.
#
#   scripts/check-hot-code.sh [--order FILE] PROGRAM                 (a release build: the package's)
#   scripts/check-hot-code.sh [--order FILE] --min-found 90 PROGRAM  (before a release: fails
#                                     when less than 90 % of the list is in the program)
#   scripts/check-hot-code.sh [--order FILE] --unoptimized PROGRAM   (a debug build: the test suite's)
#   scripts/check-hot-code.sh [--order FILE] --writable-constants PROGRAM  (linked by a Swift
#                                     older than 6.3, whose lld crashes on readonly-data.ld:
#                                     without either layout script)
#
# A debug build holds neither the toolchain's code (Swift.o, Foundation: linked
# dynamically) nor the functions only the optimiser makes (specialisations, merged and
# outlined functions, clones); with --unoptimized the check counts only the names of the
# package's own modules that a debug build has too. Those are the names a rename in the
# agent's code makes stale.
# --min-found is the share of the list that must be in the program (default: none; below 90 %
# the check prints a note to regenerate). The list is made with the machine's Swift, and
# another Swift's standard library and optimiser name part of the functions differently
# (Swift 6.0 for the Debian 13 packages finds fewer); the check that the found ones lie at
# the start of the code is the same whatever the share.
# NM names the nm to use (default nm; aarch64-linux-gnu-nm for a cross-built program).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ORDER=link/hot-code.order
UNOPTIMIZED=false
MIN_FOUND=0
WRITABLE_CONSTANTS=false
while [ $# -gt 0 ]; do
  case "$1" in
    --order) ORDER=$2; shift 2 ;;
    --unoptimized) UNOPTIMIZED=true; shift ;;
    --min-found) MIN_FOUND=$2; shift 2 ;;
    --writable-constants) WRITABLE_CONSTANTS=true; shift ;;
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-hot-code.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || { echo "check-hot-code.sh: name the program (see --help)" >&2; exit 2; }
PROGRAM=$1
[ -f "$ORDER" ] || die "no $ORDER"
[ -x "$PROGRAM" ] || die "no program at $PROGRAM"

WANT=$(mktemp)
at_exit 'rm -f "$WANT"'
if $UNOPTIMIZED; then
  # The package's own modules (Sources/*/ with Swift files; the benchmarks and rigs are not
  # in the program): their mangled prefix is $s, the name's length, the name.
  PREFIXES=()
  for dir in Sources/*/; do
    module=$(basename "$dir" | tr - _)
    case "$module" in ariata_bench|Rigs) continue ;; esac
    [ -n "$(find "$dir" -name '*.swift' -print -quit)" ] || continue
    PREFIXES+=("\$s${#module}${module}")
  done
  grep -v '^#' "$ORDER" | grep -F "${PREFIXES[@]/#/-e}" |
    grep -vE "Tf[0-9]|Tgq?5|Tt[0-9]*g5|Tm$|WO[a-z]$|[.']" > "$WANT" || true
else
  grep -v '^#' "$ORDER" | grep -v '^$' > "$WANT" || true
fi

TEXT=$(readelf -SW "$PROGRAM" | sed -n 's/^ *\[ *[0-9]*\] *//p' | awk '$1 == ".text" { print $3, $5 }')
read -r TEXT_START TEXT_SIZE <<<"$TEXT"
[ -n "${TEXT_SIZE:-}" ] || die "no .text section in $PROGRAM"
HOT=$("${NM:-nm}" --defined-only "$PROGRAM" | awk -v order="$WANT" -v start="$TEXT_START" -v size="$TEXT_SIZE" '
  function hex(s,   i, n) { n = 0; s = tolower(s); for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return n }
  BEGIN { while ((getline line < order) > 0) if (line != "") { want[line] = 1; listed++ } }
  ($2 ~ /^[tTwW]$/) && ($3 in want) && !($3 in seen) { seen[$3] = 1; found++; a = hex($1) - hex(start); if (a > last) last = a }
  END { printf "%d %d %d %d\n", listed, found, last, hex(size) }')
read -r LISTED FOUND SPAN TEXT_BYTES <<<"$HOT"
[ "$LISTED" -gt 0 ] || die "$ORDER lists no functions$($UNOPTIMIZED && echo " of the package's own modules")"
# (Not `$($UNOPTIMIZED && echo …)` in an assignment: its status would end the script under set -e.)
OWN=
if $UNOPTIMIZED; then OWN=" (the package's own, unoptimised)"; fi
STALE="only $FOUND of the $LISTED functions of $ORDER$OWN are in $PROGRAM"
[ "$FOUND" -ge $(( (LISTED * MIN_FOUND + 99) / 100 )) ] ||
  die "$STALE (less than $MIN_FOUND %): regenerate it (scripts/hot-code.sh)"
[ "$FOUND" -ge $(( (LISTED * 90 + 99) / 100 )) ] ||
  echo "note: $STALE (less than 90 %): it costs memory, not correctness; regenerate it before a release (scripts/hot-code.sh, docs/releasing.md)"
if $UNOPTIMIZED; then
  echo "ok: $FOUND of the $LISTED functions of the package's own modules in $ORDER are in $PROGRAM"
  exit 0
fi
[ "$SPAN" -le $(( TEXT_BYTES * 6 / 10 )) ] ||
  die "the functions of $ORDER reach $SPAN bytes into the program's $TEXT_BYTES bytes of code: the release link did not use the ordering (lld and --symbol-ordering-file in Package.swift)"
echo "ok: $FOUND of $LISTED listed functions lie in the first $SPAN of $TEXT_BYTES bytes of code"

if $WRITABLE_CONSTANTS; then
  echo "ok: ICU's data and the private functions not checked (--writable-constants: linked without readonly-data.ld and private-code.ld)"
  exit 0
fi
# ICU's data: its section's flags (readelf's 8th column), found by the symbol's address.
ICU=$("${NM:-nm}" --defined-only "$PROGRAM" | awk '$3 ~ /^icudt[0-9]+_dat$/ && !at { at = $1 } END { print at }')
[ -n "$ICU" ] || die "no ICU data (icudt*_dat) in $PROGRAM: is it the static build?"
FLAGS=$(readelf -SW "$PROGRAM" | sed -n 's/^ *\[ *[0-9]*\] *//p' | awk -v at="$ICU" '
  function hex(s,   i, n) { n = 0; s = tolower(s); for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return n }
  $2 == "PROGBITS" && !found && hex($3) <= hex(at) && hex(at) < hex($3) + hex($5) { found = $1 " " $7 }
  END { print found }')
[ -n "$FLAGS" ] || die "ICU's data at 0x$ICU is in no section of $PROGRAM"
case "${FLAGS#* }" in
  *W*) die "ICU's data lies in the writable section ${FLAGS%% *}: the release link did not use link/readonly-data.ld (Package.swift)" ;;
esac
echo "ok: ICU's data lies in the read-only section ${FLAGS%% *}"
# The compiler's private functions, which the list cannot name: gathered just before the
# ordered code (private-code.ld), the section right before .text.
PRIVATE=$(readelf -SW "$PROGRAM" | sed -n 's/^ *\[ *[0-9]*\] *//p' |
  awk '$1 == ".text.private" { at = NR } $1 == ".text" && at && NR == at + 1 { print "ok" }')
[ "$PRIVATE" = ok ] ||
  die "no .text.private just before .text in $PROGRAM: the release link did not use link/private-code.ld (Package.swift)"
echo "ok: the compiler's private functions lie in .text.private, just before the ordered code"
