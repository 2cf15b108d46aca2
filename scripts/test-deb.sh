#!/usr/bin/env bash
# The Debian package, tested as a user would meet it (CI runs this after the test suite):
#
#   1. builds ariata-agent_<version>_<arch>.deb (scripts/build-deb.sh) and runs lintian;
#   2. makes a clean, minimal Debian bookworm root (debootstrap --variant=minbase: no Swift)
#      and installs the package there with `apt-get install ./…deb`, so its dependencies
#      come from its Depends alone;
#   3. in that root: --version, --help, `man ariata-agent`, `onboard --yes` against the
#      reference receiver (tools/ingest-receiver/receiver.py, outside the root on 127.0.0.1),
#      then `ariata-agent run` as the service user with a health file source, until the
#      receiver has every sample; the iroh bridge (/usr/lib/ariata-agent/ariata-iroh-bridge
#      and its library: owners, modes, ldd, RUNPATH, --version, --help), then onboarding
#      with a Virtues box's pairing code and a run that delivers the samples to it over iroh
#      (the receiver's box mode), both sides in a network namespace with loopback alone;
#   4. upgrade: the agent runs as a (stand-in) service with records pending while the
#      receiver is down; the user edits agent.toml; the same program packaged as the next
#      version is installed over it; the maintainer scripts stop and start the service, the
#      new daemon delivers the pending records once the receiver is back, and agent.toml is
#      byte for byte the user's;
#   5. `apt-get remove` leaves only the configuration, the queue and the user; `apt-get
#      purge` leaves nothing: the root's file list, owners and modes and its user and group
#      entries are compared with those taken before the install.
#
# Without options it tests Debian 12 amd64 as above. scripts/test-debs.sh tests the Debian 13
# packages with it:
#   --deb FILE        test this package instead of building one (version N+1 is the same
#                     package with its version raised: dpkg-deb -R, then -b)
#   --suite NAME      the root's Debian release (default bookworm)
#   --arch ARCH       the root's architecture (default this machine's); another one runs
#                     under qemu-user (binfmt_misc with qemu-<cpu>, e.g. qemu-user-static)
#   --streams all     the run in step 3 also captures location from a gpsd and audio from an
#                     ALSA device in the root (gpsd and socat installed there, a pty fed the
#                     demo track, a FIFO fed a tone), until the receiver has all three
#                     streams (default: health only)
#
# Runs as root (debootstrap, chroot, mount). Needs Debian's mirror (or DEB_TEST_MIRROR).
#   DEB_TEST_CACHE=DIR         keep the minbase root as DIR/<suite>-<arch>-minbase.tar between runs
#   DEB_TEST_WORK=DIR          where the root is made (default /var/tmp)
#   DEB_TEST_LINTIAN_FAIL_ON   lintian's --fail-on (default error,warning: a warning must be
#                              fixed or overridden with its reason in packaging/deb/lintian-overrides)
#   DEB_TEST_KEEP=1            keep the work directory (its mounts are always undone)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SCRIPT_NAME=test-deb
DIE_PREFIX="FAIL: "
. scripts/lib.sh

SUITE=bookworm
ARCH=$(dpkg --print-architecture)
DEB_GIVEN=""
STREAMS=health
while [ $# -gt 0 ]; do
  case "$1" in
    --deb) DEB_GIVEN=$(readlink -f "$2"); shift 2 ;;
    --suite) SUITE=$2; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    --streams) STREAMS=$2; shift 2 ;;
    -h|--help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-deb.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$STREAMS" in health|all) ;; *) echo "test-deb.sh: --streams takes health or all" >&2; exit 2 ;; esac
MIRROR=${DEB_TEST_MIRROR:-http://deb.debian.org/debian}
CACHE=${DEB_TEST_CACHE:-}
LINTIAN_FAIL_ON=${DEB_TEST_LINTIAN_FAIL_ON:-error,warning}
TEST_START=$(date +%s.%N)

[ "$(id -u)" -eq 0 ] || die "run as root: debootstrap, chroot and mount need it (sudo $0)"
[ -z "$DEB_GIVEN" ] || [ -f "$DEB_GIVEN" ] || die "--deb: no such file"
[ -z "$DEB_GIVEN" ] || [ "$(dpkg-deb -f "$DEB_GIVEN" Architecture)" = "$ARCH" ] ||
  die "$DEB_GIVEN is for $(dpkg-deb -f "$DEB_GIVEN" Architecture), the root for $ARCH: give --arch"
if [ "$ARCH" != "$(dpkg --print-architecture)" ]; then
  CPU=$(dpkg-architecture -a"$ARCH" -qDEB_HOST_GNU_CPU 2>/dev/null) || die "--arch $ARCH is not a Debian architecture"
  [ "$(cat "/proc/sys/fs/binfmt_misc/qemu-$CPU" 2>/dev/null | head -1)" = enabled ] ||
    die "$ARCH programs do not run here: install qemu-user-static and enable it (mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; update-binfmts --enable qemu-$CPU), or run scripts/test-debs.sh, which does"
fi
need_tools "run 'sudo scripts/install-deps.sh' (it installs debootstrap, lintian, dpkg-dev, man-db)" \
  debootstrap lintian python3 dpkg-deb chroot mount umount sha256sum readelf ip
# The box receiver imports the iroh package scripts/fetch-iroh.sh unpacks for this machine.
HOST_IROH_ARCH=$(dpkg --print-architecture)
[ -f ".iroh/$HOST_IROH_ARCH/python/iroh/iroh_ffi.py" ] || bash scripts/fetch-iroh.sh --arch "$HOST_IROH_ARCH" ||
  die "the box test needs the iroh Python package in .iroh/$HOST_IROH_ARCH/python: run scripts/fetch-iroh.sh"

WORK_PARENT=${DEB_TEST_WORK:-/var/tmp}
WORK=$(readlink -f "$(mktemp -d "$WORK_PARENT/ariata-deb-test.XXXXXX")")
R="$WORK/root"
mkdir "$R"
RIG_PIDS=()    # the microphone rig's feeder (--streams all)
TEST_DIRS=()   # directories the test made in the root (removed before the last comparisons)

mounts_under_root() { awk -v r="$R" 'index($2, r) == 1 { print $2 }' /proc/self/mounts; }
# At exit, after the rigs (registered later, so stopped first): the root's processes,
# its mounts and the work directory.
teardown_root() {
  [ ${#RIG_PIDS[@]} -gt 0 ] && kill "${RIG_PIDS[@]}" 2>/dev/null
  # The daemons this test started inside the root (directly, or through the stand-in
  # service manager): every process whose root directory is $R.
  local p pids=()
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$R" ] && pids+=("${p#/proc/}")
  done
  if [ ${#pids[@]} -gt 0 ]; then
    kill -TERM "${pids[@]}" 2>/dev/null; sleep 2; kill -KILL "${pids[@]}" 2>/dev/null
  fi
  wait 2>/dev/null
  local m
  for m in $(mounts_under_root | sort -r); do umount "$m" 2>/dev/null || umount -l "$m"; done
  if [ -n "$(mounts_under_root)" ]; then
    echo "test-deb: still mounted under $R, so $WORK is left in place: $(mounts_under_root | tr '\n' ' ')" >&2
  elif [ "${DEB_TEST_KEEP:-0}" = 1 ]; then
    echo "test-deb: kept $WORK"
  else
    rm -rf --one-file-system "$WORK"
  fi
}
at_exit teardown_root
# ariata-agent as the service user, as systemd would start it (User=ariata, audio, dialout).
SERVICE_USER=(setpriv --reuid=ariata --regid=ariata --init-groups)
as_service() { inroot "$R" "${SERVICE_USER[@]}" "$@"; }
# Every path of the root's own file system with its type, mode and owner, and the user and
# group entries of the service user. Left out: the kernel's file systems, /tmp (this test's
# inputs), what apt, dpkg and man-db keep as caches and logs, and /etc/passwd- (and group-,
# shadow-, gshadow-): the backups that shadow's useradd and userdel write of the previous
# account files on every change, by design.
snapshot() {
  {
    inroot "$R" find / -xdev \( -path /proc -o -path /dev -o -path /sys -o -path /tmp \
      -o -path /var/cache -o -path /var/log -o -path /var/lib/apt/lists \
      -o -path /etc/passwd- -o -path /etc/group- -o -path /etc/shadow- -o -path /etc/gshadow- \) -prune \
      -o -printf '%p %y %m %u:%g\n'
    cd "$R" && grep -H '^ariata:' etc/passwd etc/group etc/shadow etc/gshadow || true
    cd "$R" && grep -H -E '^(audio|dialout):' etc/group etc/gshadow || true
  } | LC_ALL=C sort > "$1"
}
stats() { curl -fsS "$RECEIVER_URL/_control/stats"; }
received() {  # received STREAM: how many records of the stream the receiver has stored
  stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"].get(sys.argv[1], 0))' "$1"
}
received_health() { received healthkit; }
# status --json of the agent in the root: "pending uploaded" of the health stream. As the
# service user: `status` run as root before the daemon has made its lock file creates it
# root-owned, and the daemon (as ariata) then cannot open it.
health_queue() {  # health_queue [CONFIG]
  as_service ariata-agent status --json --config "${1:-/etc/ariata/agent.toml}" 2>/dev/null |
    python3 -c 'import json,sys
s = {x["name"]: x for x in json.load(sys.stdin)["streams"]}["health"]
print(s.get("pending", 0), s.get("uploaded", 0))'
}
# Sets KEY = VALUE in [SECTION] of a TOML file (the line replaced, or added under the header).
toml_set() {  # toml_set FILE SECTION KEY VALUE
  python3 - "$@" <<'PY'
import re, sys
path, section, key, value = sys.argv[1:]
lines = open(path).read().split("\n")
start = next((i for i, l in enumerate(lines) if l.strip() == f"[{section}]"), None)
if start is None:
    lines += ["", f"[{section}]", f"{key} = {value}"]
else:
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    hit = next((i for i in range(start + 1, end) if re.match(rf"\s*{re.escape(key)}\s*=", lines[i])), None)
    if hit is None:
        lines.insert(start + 1, f"{key} = {value}")
    else:
        lines[hit] = f"{key} = {value}"
open(path, "w").write("\n".join(lines))
PY
}

# --- 1. the package -----------------------------------------------------------------
if [ -n "$DEB_GIVEN" ]; then
  say "the package $(basename "$DEB_GIVEN") ($SUITE $ARCH)"
  DEB_N=$DEB_GIVEN
else
  say "building the package (scripts/build-deb.sh)"
  T=$(date +%s.%N)
  DEB_OUTPUT_DIR="$WORK/n" bash scripts/build-deb.sh | tee "$WORK/build-n.log"
  BUILD_SECONDS=$(since "$T")
  DEB_N=$(ls "$WORK"/n/ariata-agent_*.deb)
fi
VERSION_N=$(dpkg-deb -f "$DEB_N" Version)
AGENT_VERSION=${VERSION_N%%-*}
DEB_SIZE=$(stat -c %s "$DEB_N")
INSTALLED_KIB=$(dpkg-deb -f "$DEB_N" Installed-Size)
echo "   Depends: $(dpkg-deb -f "$DEB_N" Depends)"

# Version N+1 now, so that the upgrade below follows a short run of the daemon: the same
# program, packaged as the next version (the Debian revision 1 becomes 2, a suffix such as
# +deb13 stays).
VERSION_N1="$AGENT_VERSION-2${VERSION_N#"$AGENT_VERSION"-1}"
T=$(date +%s.%N)
if [ -n "$DEB_GIVEN" ]; then
  say "the same package as version N+1 ($VERSION_N1)"
  dpkg-deb -R "$DEB_N" "$WORK/n1-tree"
  sed -i "s/^Version: .*/Version: $VERSION_N1/" "$WORK/n1-tree/DEBIAN/control"
  mkdir "$WORK/n1"
  dpkg-deb --build --root-owner-group -Zxz "$WORK/n1-tree" "$WORK/n1/" > /dev/null
else
  say "building the same program as version N+1"
  ARIATA_DEB_VERSION="$VERSION_N1" DEB_OUTPUT_DIR="$WORK/n1" bash scripts/build-deb.sh > "$WORK/build-n1.log" 2>&1 ||
    { cat "$WORK/build-n1.log" >&2; die "building version $VERSION_N1 failed"; }
fi
REBUILD_SECONDS=$(since "$T")
DEB_N1=$(ls "$WORK"/n1/ariata-agent_*.deb)
ok "$(basename "$DEB_N1") in $REBUILD_SECONDS s"

say "lintian $(basename "$DEB_N") (fails on: $LINTIAN_FAIL_ON)"
# (--show-overrides would make the overridden tags count for --fail-on: they are listed below.)
lintian --fail-on "$LINTIAN_FAIL_ON" --display-level '>=info' "$DEB_N" ||
  die "lintian found problems (above): fix them, or override a warning with its reason in packaging/deb/lintian-overrides"
ok "lintian; overridden, with the reasons in packaging/deb/lintian-overrides: $(grep -v '^#' packaging/deb/lintian-overrides | grep . | sed 's/^[^:]*: //' | tr '\n' ' ')"

# --- 2. a clean root --------------------------------------------------------------------
ROOT_TAR="$CACHE/$SUITE-$ARCH-minbase.tar"
say "a clean Debian $SUITE $ARCH root (debootstrap --variant=minbase) in $R"
T=$(date +%s.%N)
if [ -n "$CACHE" ] && [ -f "$ROOT_TAR" ]; then
  tar -xpf "$ROOT_TAR" -C "$R"
  echo "   from the cache $ROOT_TAR"
else
  debootstrap --variant=minbase --arch="$ARCH" "$SUITE" "$R" "$MIRROR" > "$WORK/debootstrap.log" 2>&1 || {
    tail -20 "$WORK/debootstrap.log" >&2
    die "debootstrap failed (above): is $MIRROR reachable? set DEB_TEST_MIRROR to a Debian mirror"; }
fi
cp /etc/resolv.conf "$R/etc/resolv.conf"
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
mount --make-rslave "$R/dev"
inroot "$R" apt-get update -q > "$WORK/apt-update.log" 2>&1 || { cat "$WORK/apt-update.log" >&2; die "apt-get update in the root failed"; }
# man-db to read the page; ca-certificates and the rest stay out: the root is what a
# minimal system has.
inroot "$R" apt-get install -y -q --no-install-recommends man-db > "$WORK/apt-man.log" 2>&1 ||
  { cat "$WORK/apt-man.log" >&2; die "installing man-db in the root failed"; }
if [ -n "$CACHE" ] && [ ! -f "$ROOT_TAR" ]; then
  mkdir -p "$CACHE"
  tar -cpf "$ROOT_TAR.tmp" -C "$R" --one-file-system . && mv "$ROOT_TAR.tmp" "$ROOT_TAR"
fi
echo "   ready in $(since "$T") s"
if inroot "$R" sh -c 'ls -d /opt/swift /usr/lib/swift /usr/libexec/swift 2>/dev/null; dpkg -l | grep -i swift'; then
  die "the root has Swift in it (above); the test needs a root without it"
fi
ok "no Swift in the root"

# --- 3. install, onboard, run -------------------------------------------------------------
TOKEN="deb-test-$(date +%s)-$RANDOM"
start_receiver "$WORK" 0 "$TOKEN"
PORT=$(cat "$WORK/receiver.port")
health_lines demo > "$R/tmp/health.jsonl"
chmod 0644 "$R/tmp/health.jsonl"
cp "$DEB_N" "$DEB_N1" "$R/tmp/"

# The dependencies first, from the package's Depends field alone (apt-get satisfy resolves
# it as `apt-get install ./…deb` would, Recommends included), so that the file lists taken
# now, before the package, hold them: what remove and purge leave is then the package's.
say "the dependencies: apt-get satisfy \"\$(dpkg-deb -f $(basename "$DEB_N") Depends)\""
T_INSTALL=$(date +%s.%N)
inroot "$R" apt-get satisfy -y -q "$(dpkg-deb -f "$DEB_N" Depends)" > "$WORK/satisfy.log" 2>&1 ||
  { cat "$WORK/satisfy.log" >&2; die "the Depends of the package cannot be met in a clean $SUITE root (above)"; }
DEPS_SECONDS=$(since "$T_INSTALL")
ok "$(grep -Eo '[0-9]+ newly installed' "$WORK/satisfy.log") packages in $DEPS_SECONDS s"
if [ "$STREAMS" = all ]; then
  # The location and microphone rigs, in the root before the file lists are taken: gpsd
  # on a socat pty pair (as scripts/demo.sh runs it), fed the demo track from outside; an
  # ALSA PCM (the file plugin, as TestSupport/Rigs/ALSARig.swift defines it) reading a FIFO
  # that tools/demo/pcm-feeder.py fills at real-time pace with a tone.
  say "the location and microphone rigs in the root: gpsd, socat, an ALSA file PCM"
  inroot "$R" apt-get install -y -q --no-install-recommends gpsd socat > "$WORK/rigs.log" 2>&1 ||
    { cat "$WORK/rigs.log" >&2; die "installing gpsd and socat in the root failed"; }
  cat > "$R/etc/asound.conf" <<'CONF'
# scripts/test-deb.sh: a capture device read from a FIFO (ALSA's file plugin over null)
pcm.deb_test_mic {
    type file
    slave.pcm "null"
    file "/dev/null"
    infile "/tmp/mic.fifo"
    format "raw"
}
CONF
  mkfifo -m 0644 "$R/tmp/mic.fifo"
  python3 - "$WORK/tone.raw" <<'PY'
import math, struct, sys
rate = 16000   # 20 s of a 440 Hz tone that swells and fades once a second, S16_LE mono
with open(sys.argv[1], "wb") as out:
    out.write(b"".join(struct.pack("<h", int(8000 * (0.5 + 0.5 * math.sin(2 * math.pi * i / rate)) *
                                             math.sin(2 * math.pi * 440 * i / rate))) for i in range(20 * rate)))
PY
  start_gps_rig "$WORK" "$R"
  python3 tools/demo/pcm-feeder.py "$WORK/tone.raw" "$R/tmp/mic.fifo" > "$WORK/pcm-feeder.log" 2>&1 &
  RIG_PIDS+=($!)
  ok "gpsd on 127.0.0.1:$GPSD_PORT, fed tools/demo/track.csv; the ALSA PCM deb_test_mic, fed a tone"
fi
snapshot "$WORK/files-before"

say "apt-get install ./$(basename "$DEB_N") in the root"
T=$(date +%s.%N)
# Without the Recommends (GeoClue, BlueZ and what they bring): what is installed besides
# the package would be a Depends that apt-get satisfy did not see.
inroot "$R" apt-get install -y -q --no-install-recommends "/tmp/$(basename "$DEB_N")" 2>&1 | tee "$WORK/install-n.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || die "apt-get install failed (above)"
INSTALL_SECONDS=$(since "$T")
grep -q '^1 upgraded\|^0 upgraded, 1 newly installed' "$WORK/install-n.log" ||
  die "apt-get install ./…deb installed more than the package: Depends misses something that apt-get satisfy did not see"
grep -q 'sudo ariata-agent onboard' "$WORK/install-n.log" || die "postinst did not print the next step (sudo ariata-agent onboard)"
ok "installed in $INSTALL_SECONDS s; postinst printed the next step"

# What the package put where, with owners and modes.
check_file() {  # check_file PATH TYPE MODE OWNER:GROUP
  local got; got=$(inroot "$R" stat -c '%F %a %U:%G' "$1" 2>/dev/null) || die "$1 is missing"
  [ "$got" = "$2 $3 $4" ] || die "$1: expected '$2 $3 $4', got '$got'"
}
check_file /usr/bin/ariata-agent "regular file" 755 root:root
check_file /lib/systemd/system/ariata-agent.service "regular file" 644 root:root
check_file /usr/lib/systemd/user/ariata-agent.service "regular file" 644 root:root
check_file /usr/lib/sysusers.d/ariata-agent.conf "regular file" 644 root:root
check_file /usr/lib/tmpfiles.d/ariata-agent.conf "regular file" 644 root:root
check_file /etc/ariata directory 750 root:ariata
check_file /etc/ariata/agent.toml "regular file" 600 ariata:ariata
check_file /var/lib/ariata directory 750 ariata:ariata
check_file /usr/share/bash-completion/completions/ariata-agent "regular file" 644 root:root
check_file /usr/share/zsh/vendor-completions/_ariata-agent "regular file" 644 root:root
check_file /usr/share/fish/vendor_completions.d/ariata-agent.fish "regular file" 644 root:root
check_file /usr/share/man/man1/ariata-agent.1.gz "regular file" 644 root:root
check_file /usr/share/doc/ariata-agent/copyright "regular file" 644 root:root
check_file /usr/share/doc/ariata-agent/changelog.Debian.gz "regular file" 644 root:root
check_file /usr/lib/ariata-agent directory 755 root:root
check_file /usr/lib/ariata-agent/ariata-iroh-bridge "regular file" 755 root:root
check_file /usr/lib/ariata-agent/libiroh_ffi.so "regular file" 644 root:root
grep -q '^ExecStart=/usr/bin/ariata-agent run --config /etc/ariata/agent.toml' "$R/lib/systemd/system/ariata-agent.service" ||
  die "the unit does not start /usr/bin/ariata-agent"
grep -q '^ExecStart=/usr/bin/ariata-agent run --config %E/ariata/agent.toml' "$R/usr/lib/systemd/user/ariata-agent.service" ||
  die "the user unit does not start /usr/bin/ariata-agent with ~/.config/ariata/agent.toml"
inroot "$R" id ariata | grep -q 'audio' && inroot "$R" id ariata | grep -q 'dialout' || die "the user ariata is not in audio and dialout: $(inroot "$R" id ariata)"
inroot "$R" dpkg-query -W -f='${Conffiles}\n' ariata-agent | grep -q '/etc/ariata/agent.toml' || die "/etc/ariata/agent.toml is not a conffile"
ok "files, owners and modes; user $(inroot "$R" id ariata)"
if inroot "$R" ldd /usr/bin/ariata-agent | grep -E 'not found|swift|Foundation'; then
  die "the installed program lacks a library (above)"
fi
ok "ldd: every library comes from Debian"
BRIDGE=/usr/lib/ariata-agent/ariata-iroh-bridge
inroot "$R" ldd "$BRIDGE" > "$WORK/ldd-bridge.txt" 2>&1 || die "ldd $BRIDGE failed: $(cat "$WORK/ldd-bridge.txt")"
if grep -E 'not found|swift|Foundation' "$WORK/ldd-bridge.txt"; then
  die "the installed bridge lacks a library (above)"
fi
grep -Eq '^\s*libiroh_ffi\.so => /usr/lib/ariata-agent/libiroh_ffi\.so ' "$WORK/ldd-bridge.txt" ||
  die "the bridge does not load libiroh_ffi.so from /usr/lib/ariata-agent: $(cat "$WORK/ldd-bridge.txt")"
RUNPATH=$(readelf -d "$R$BRIDGE" | sed -n 's/.*(\(RPATH\|RUNPATH\)).*\[\(.*\)\]/\1 \2/p')
[ "$RUNPATH" = 'RUNPATH $ORIGIN' ] || die "the bridge's search path is '$RUNPATH', not RUNPATH \$ORIGIN alone"
ok "ldd: the bridge loads libiroh_ffi.so from /usr/lib/ariata-agent (RUNPATH \$ORIGIN), the rest from Debian"

say "ariata-agent --version, --help, man ariata-agent; ariata-iroh-bridge --version, --help"
GOT=$(inroot "$R" ariata-agent --version)
[ "$GOT" = "$AGENT_VERSION" ] || die "--version printed '$GOT', expected $AGENT_VERSION"
ok "--version: $GOT"
inroot "$R" ariata-agent --help > "$WORK/help.txt" || die "--help failed"
grep -q 'onboard' "$WORK/help.txt" && grep -q 'USAGE' "$WORK/help.txt" || die "--help lacks USAGE or onboard: $(cat "$WORK/help.txt")"
ok "--help ($(wc -l < "$WORK/help.txt") lines)"
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 MANWIDTH=80 chroot "$R" man -P cat ariata-agent > "$WORK/man.txt" 2>"$WORK/man.err" ||
  die "man ariata-agent failed: $(cat "$WORK/man.err")"
grep -q 'ariata-agent' "$WORK/man.txt" && grep -qi 'onboard' "$WORK/man.txt" || die "the man page lacks the command or its subcommands"
ok "man ariata-agent ($(wc -l < "$WORK/man.txt") lines): $(sed -n '/NAME/{n;p;q}' "$WORK/man.txt" | sed 's/^ *//')"
# As the service user, whose daemon starts it.
GOT=$(as_service "$BRIDGE" --version) || die "ariata-iroh-bridge --version failed"
[[ $GOT == "ariata-iroh-bridge "*iroh* ]] || die "ariata-iroh-bridge --version printed '$GOT'"
as_service "$BRIDGE" --help > "$WORK/bridge-help.txt" || die "ariata-iroh-bridge --help failed"
grep -q 'virtues/http/1' "$WORK/bridge-help.txt" && grep -q 'Options: --help, --version' "$WORK/bridge-help.txt" ||
  die "ariata-iroh-bridge --help lacks the ALPN or its options: $(head -5 "$WORK/bridge-help.txt")"
ok "ariata-iroh-bridge --version: $GOT; --help ($(wc -l < "$WORK/bridge-help.txt") lines)"

say "onboard --yes against the receiver at 127.0.0.1:$PORT"
# The user's settings first, in the installed file: health from a file, no gpsd or
# microphone on this machine, short intervals for the test.
CONF="$R/etc/ariata/agent.toml"
if [ "$STREAMS" = all ]; then
  toml_set "$CONF" location gpsd_host '"127.0.0.1"'
  toml_set "$CONF" location gpsd_port "$GPSD_PORT"
  toml_set "$CONF" location interval 2
  toml_set "$CONF" microphone device '"deb_test_mic"'
  toml_set "$CONF" microphone chunk_seconds 6
  toml_set "$CONF" microphone overlap_seconds 1
  # The root's clock is the host's, which may not be NTP-disciplined (docs/time.md).
  toml_set "$CONF" daemon trust_system_clock true
else
  toml_set "$CONF" location enabled false
  toml_set "$CONF" microphone enabled false
fi
toml_set "$CONF" health enabled true
toml_set "$CONF" health commit_interval 2
toml_set "$CONF" upload interval 5
cat >> "$CONF" <<'TOML'

[[health.source]]
kind = "file"
path = "/tmp/health.jsonl"
format = "jsonl"
name = "deb-test-watch"
backfill_days = 1
TOML
inroot "$R" ariata-agent onboard --yes --endpoint "http://127.0.0.1:$PORT" --token "$TOKEN" --device-name deb-test 2>&1 |
  tee "$WORK/onboard.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || die "onboard failed (above)"
REQUESTS=$(stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
[ "$REQUESTS" -ge 1 ] || die "onboard said it verified the server, but the receiver saw no request"
grep -Eq "^endpoint *= *[\"']http://127.0.0.1:$PORT" "$CONF" || die "onboard did not write the endpoint into $CONF"
check_file /etc/ariata/agent.toml "regular file" 600 ariata:ariata
INSTALL_TO_ONBOARD=$(since "$T_INSTALL")
ok "onboarded; from the start of the install (dependencies included) to a verified onboard: $INSTALL_TO_ONBOARD s"

say "ariata-agent run as the service user, until the receiver has the samples"
# exec: $! is then the daemon itself (env, chroot and setpriv each exec the next).
( exec env -i "${ROOT_ENV[@]}" chroot "$R" "${SERVICE_USER[@]}" ariata-agent run --config /etc/ariata/agent.toml ) \
  > "$WORK/run-a.log" 2>&1 &
AGENT_PID=$!
T_RUN=$(date +%s.%N)
delivered_all() {
  local q; q=$(health_queue) || return 1
  set -- $q
  [ "$1" -eq 0 ] && [ "$2" -gt 0 ] && [ "$(received_health)" -eq "$2" ]
}
delivered_streams() {
  delivered_all || return 1
  [ "$STREAMS" = health ] || { [ "$(received location)" -ge 3 ] && [ "$(received microphone)" -ge 2 ]; }
}
# Under qemu-user every instruction is emulated: more time.
RUN_LIMIT=60
[ "$ARCH" = "$(dpkg --print-architecture)" ] || RUN_LIMIT=300
wait_until "$RUN_LIMIT" "the $STREAMS streams at the receiver" delivered_streams
RUN_SECONDS=$(since "$T_RUN")
# The daemon's CPU time (user + system, in clock ticks) and peak resident memory so far.
read -r -a PSTAT < "/proc/$AGENT_PID/stat"
RUN_CPU=$(awk -v t="$(( PSTAT[13] + PSTAT[14] ))" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }')
RUN_HWM=$(awk '/^VmHWM/ { printf "%.0f MB", $2 / 1024 }' "/proc/$AGENT_PID/status")
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" || die "the daemon did not exit 0 on SIGTERM: $(tail -5 "$WORK/run-a.log")"
RECEIVED_A=$(received_health)
if [ "$STREAMS" = all ]; then
  ok "the receiver has $(received location) location fixes, $(received microphone) audio chunks and all $RECEIVED_A health samples after $RUN_SECONDS s; the daemon used $RUN_CPU s of CPU (peak RSS $RUN_HWM) and stopped cleanly"
else
  ok "the receiver has all $RECEIVED_A health samples; the daemon stopped cleanly"
fi

say "a Virtues box: onboard with its pairing code, then a run that delivers over iroh"
# The reference receiver plays the box (--generation box): pairing over plain HTTP, the
# rest over iroh. Everything that binds an iroh endpoint (the box, and the bridge the agent
# starts in the root) runs in a network namespace of its own with loopback alone, so that
# nothing leaves the machine (the receiver refuses to start otherwise). Its own
# configuration and queue in /tmp of the root: the package's agent.toml stays as it is.
NETNS="ariata-deb-test-$$"
ip netns add "$NETNS" || die "cannot make a network namespace (ip netns add $NETNS)"
at_exit 'ip netns del "$NETNS" 2>/dev/null'
ip netns exec "$NETNS" ip link set lo up
in_netns() { ip netns exec "$NETNS" "$@"; }
T=$(date +%s.%N)
BOX_CODE=$(python3 -c 'import secrets; print(f"{secrets.randbelow(10**6):06d}")')
# exec: $! is the receiver itself (ip netns exec execs it).
( exec ip netns exec "$NETNS" python3 tools/ingest-receiver/receiver.py --generation box --port 0 \
    --port-file "$WORK/box.port" --store "$WORK/box.sqlite" --box-pairing-code "$BOX_CODE" ) > "$WORK/box.log" 2>&1 &
BOX_PID=$!
at_exit '[ -n "${BOX_PID:-}" ] && kill "$BOX_PID" 2>/dev/null'
wait_until 60 "the box receiver (its log: $WORK/box.log)" test -s "$WORK/box.port"
BOX_URL="http://127.0.0.1:$(cat "$WORK/box.port")"
box_received() { in_netns curl -fsS "$BOX_URL/_control/stats" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["records"].get("healthkit", 0))'; }
BOX_CONF=/tmp/box-test/agent.toml
inroot "$R" install -d -o ariata -g ariata -m 0700 /tmp/box-test
health_lines demo > "$R/tmp/box-test/health.jsonl"
cat > "$R$BOX_CONF" <<'TOML'
# scripts/test-deb.sh: the agent of the box test, health from a file only
[storage]
database = "/tmp/box-test/agent.sqlite"
[upload]
interval = 5
[location]
enabled = false
[microphone]
enabled = false
[health]
enabled = true
commit_interval = 2

[[health.source]]
kind = "file"
path = "/tmp/box-test/health.jsonl"
format = "jsonl"
name = "deb-test-box-watch"
backfill_days = 1
TOML
inroot "$R" chown -R ariata:ariata /tmp/box-test
chmod 0600 "$R$BOX_CONF"
as_service_in_netns() { in_netns env -i "${ROOT_ENV[@]}" chroot "$R" "${SERVICE_USER[@]}" "$@"; }
as_service_in_netns ariata-agent onboard --yes --config "$BOX_CONF" --endpoint "$BOX_URL" --code "$BOX_CODE" \
  --device-name deb-test-box > "$WORK/onboard-box.log" 2>&1 || { cat "$WORK/onboard-box.log" >&2; die "onboard with the box's code failed (above)"; }
grep -q 'paired with Virtues box' "$WORK/onboard-box.log" && grep -q 'box over iroh: reached the box' "$WORK/onboard-box.log" ||
  { cat "$WORK/onboard-box.log" >&2; die "onboard did not pair with the box, or its bridge did not reach it (above)"; }
ok "onboarded with the box's code; $(grep -o 'box over iroh: reached the box[^;]*' "$WORK/onboard-box.log" | head -1)"
( exec ip netns exec "$NETNS" env -i "${ROOT_ENV[@]}" chroot "$R" "${SERVICE_USER[@]}" ariata-agent run --config "$BOX_CONF" ) \
  > "$WORK/run-box.log" 2>&1 &
BOX_AGENT_PID=$!
box_delivered() {
  local q; q=$(health_queue "$BOX_CONF") || return 1
  set -- $q
  [ "$1" -eq 0 ] && [ "$2" -gt 0 ] && [ "$(box_received)" -eq "$2" ]
}
wait_until "$RUN_LIMIT" "the health samples at the box, over iroh (the daemon's log: $WORK/run-box.log)" box_delivered
kill -TERM "$BOX_AGENT_PID"; wait "$BOX_AGENT_PID" || die "the daemon did not exit 0 on SIGTERM: $(tail -5 "$WORK/run-box.log")"
# The bridge lives for an upload cycle, as the daemon's child: none may outlive the daemon.
for p in /proc/[0-9]*; do
  [ "$(readlink "$p/root" 2>/dev/null)" = "$R" ] && tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q ariata-iroh-bridge &&
    die "an ariata-iroh-bridge (pid ${p#/proc/}) outlived the daemon"
done
BOX_RECEIVED=$(box_received)
kill "$BOX_PID"; wait "$BOX_PID" 2>/dev/null || true; BOX_PID=""
ip netns del "$NETNS"
rm -rf "$R/tmp/box-test"
BOX_SECONDS=$(since "$T")
ok "the box has all $BOX_RECEIVED health samples, sent over iroh by /usr/lib/ariata-agent/ariata-iroh-bridge; the daemon stopped cleanly, no bridge left ($BOX_SECONDS s)"

# --- 4. upgrade -------------------------------------------------------------------------
say "upgrade: a running service with pending records, the user's edited agent.toml, then version N+1"
# systemd does not run in a chroot. A stand-in systemctl (in /usr/local/sbin, which the
# apt-get calls below put first in the maintainer scripts' PATH with DPkg::Path) answers
# is-enabled and is-active and starts and stops the daemon as the unit would (User=ariata);
# the maintainer scripts and Debian's real deb-systemd-invoke and deb-systemd-helper call it.
mkdir -p "$R/run/systemd/system" "$R/run/fake-systemd"
cat > "$R/usr/local/sbin/systemctl" <<'SH'
#!/bin/sh
# test stand-in for systemctl, for ariata-agent.service only (scripts/test-deb.sh)
echo "systemctl $*" >> /run/fake-systemd/calls
pidfile=/run/fake-systemd/ariata-agent.pid
running() { [ -f $pidfile ] && kill -0 "$(cat $pidfile)" 2>/dev/null; }
action=""; unit=""
for arg in "$@"; do
  case "$arg" in
    -*) ;;
    *) if [ -z "$action" ]; then action=$arg; elif [ -z "$unit" ]; then unit=$arg; fi ;;
  esac
done
case "$action" in
  is-enabled)
    if ls /etc/systemd/system/*.wants/"$unit" >/dev/null 2>&1; then echo enabled; else echo disabled; exit 1; fi ;;
  is-active) running ;;
  stop|restart)
    if running; then
      pid=$(cat $pidfile); kill -TERM "$pid"
      i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    fi
    rm -f $pidfile
    [ "$action" = stop ] || exec "$0" start "$unit" ;;
  start)
    running && exit 0
    setsid setpriv --reuid=ariata --regid=ariata --init-groups /usr/bin/ariata-agent run --config /etc/ariata/agent.toml \
      </dev/null >>/run/fake-systemd/service.log 2>&1 &
    echo $! > $pidfile ;;
  --version|"") echo "systemd 252 (252-test-stand-in)" ;;
  *) ;;
esac
exit 0
SH
chmod 0755 "$R/usr/local/sbin/systemctl"
APT_PATH=(-o "DPkg::Path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
# Enabled as `onboard` does it (`systemctl enable`: the link of the unit's WantedBy=).
for dir in /etc/systemd /etc/systemd/system /etc/systemd/system/multi-user.target.wants; do
  [ -d "$R$dir" ] || { mkdir "$R$dir"; TEST_DIRS=("$R$dir" "${TEST_DIRS[@]}"); }
done
ln -s /lib/systemd/system/ariata-agent.service "$R/etc/systemd/system/multi-user.target.wants/ariata-agent.service"

stop_receiver
health_lines 20 >> "$R/tmp/health.jsonl"
inroot "$R" systemctl start ariata-agent.service
OLD_PID=$(cat "$R/run/fake-systemd/ariata-agent.pid")
pending_now() { local q; q=$(health_queue) || return 1; set -- $q; [ "$1" -ge 20 ]; }
wait_until 30 "the new samples pending in the queue" pending_now
read -r PENDING_BEFORE _ < <(health_queue)
ok "the service runs (pid $OLD_PID) with $PENDING_BEFORE records pending; the receiver is down"

echo "# edited by the administrator before the upgrade" >> "$CONF"
toml_set "$CONF" log level '"debug"'
SUM_BEFORE=$(sha256sum < "$CONF")
STAT_BEFORE=$(inroot "$R" stat -c '%a %U:%G' /etc/ariata/agent.toml)

say "apt-get install ./$(basename "$DEB_N1") over $VERSION_N (no --force-conf* option, stdin closed)"
: > "$R/run/fake-systemd/calls"
inroot "$R" apt-get install -y -q --no-install-recommends "${APT_PATH[@]}" "/tmp/$(basename "$DEB_N1")" < /dev/null 2>&1 | tee "$WORK/install-n1.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || die "the upgrade failed (above)"
[ "$(inroot "$R" dpkg-query -W -f='${Version}' ariata-agent)" = "$VERSION_N1" ] || die "version $VERSION_N1 is not the installed one"
if grep -Ei "configuration file|conffile|\*\*\* agent.toml" "$WORK/install-n1.log"; then
  die "dpkg asked about the configuration file (above)"
fi
[ "$(sha256sum < "$CONF")" = "$SUM_BEFORE" ] || die "the upgrade changed /etc/ariata/agent.toml"
[ "$(inroot "$R" stat -c '%a %U:%G' /etc/ariata/agent.toml)" = "$STAT_BEFORE" ] ||
  die "the upgrade changed the owner or mode of agent.toml: $(inroot "$R" stat -c '%a %U:%G' /etc/ariata/agent.toml)"
check_file /etc/ariata directory 750 root:ariata
ok "agent.toml byte for byte the user's ($STAT_BEFORE), no conffile question"
echo "   systemctl calls during the upgrade: $(tr '\n' ';' < "$R/run/fake-systemd/calls")"
grep -q 'stop ariata-agent.service' "$R/run/fake-systemd/calls" || die "prerm did not stop the service"
grep -q 'start ariata-agent.service' "$R/run/fake-systemd/calls" || die "postinst did not start the service again"
grep -q 'ariata-agent is installed. Next step' "$WORK/install-n1.log" && die "postinst of an upgrade of an onboarded agent asked to onboard"
[ ! -e "$R/run/ariata-agent.dpkg-restart" ] || die "postinst left /run/ariata-agent.dpkg-restart behind"
NEW_PID=$(cat "$R/run/fake-systemd/ariata-agent.pid")
[ "$NEW_PID" != "$OLD_PID" ] && kill -0 "$NEW_PID" || die "no new daemon runs after the upgrade"
read -r PENDING_AFTER _ < <(health_queue)
[ "$PENDING_AFTER" -ge "$PENDING_BEFORE" ] || die "the queue lost records in the upgrade: $PENDING_BEFORE pending before, $PENDING_AFTER after"
ok "the daemon was stopped (pid $OLD_PID) and started again (pid $NEW_PID); $PENDING_AFTER records still pending"

say "the receiver is back: the upgraded daemon delivers what was pending"
T=$(date +%s.%N)
start_receiver "$WORK" "$PORT" "$TOKEN"
expect_delivered() { [ "$(received_health)" -ge $(( RECEIVED_A + 20 )) ] && delivered_all; }
wait_until 180 "the pending records at the receiver after the upgrade" expect_delivered
ok "the receiver has $(received_health) health samples ($RECEIVED_A before the upgrade), nothing pending; $(since "$T") s after the receiver's return"

# --- 5. remove and purge ------------------------------------------------------------------
stop_gps_rig
if [ ${#RIG_PIDS[@]} -gt 0 ]; then
  kill "${RIG_PIDS[@]}" 2>/dev/null; wait "${RIG_PIDS[@]}" 2>/dev/null || true
fi
say "apt-get remove"
inroot "$R" apt-get remove -y -q "${APT_PATH[@]}" ariata-agent > "$WORK/remove.log" 2>&1 || { cat "$WORK/remove.log" >&2; die "apt-get remove failed"; }
grep -q 'stop ariata-agent.service' "$R/run/fake-systemd/calls" || die "prerm did not stop the service on remove"
! kill -0 "$NEW_PID" 2>/dev/null || die "the daemon still runs after remove"
[ ! -e "$R/etc/systemd/system/multi-user.target.wants/ariata-agent.service" ] || die "the service is still enabled after remove"
# The stand-in service manager goes; what is left is the package's doing.
rm -rf "$R/run/systemd" "$R/run/fake-systemd" "$R/usr/local/sbin/systemctl"
for dir in "${TEST_DIRS[@]}"; do rmdir "$dir" 2>/dev/null || true; done   # what is left in them shows below
snapshot "$WORK/files-removed"
ADDED=$(LC_ALL=C comm -13 "$WORK/files-before" "$WORK/files-removed")
GONE=$(LC_ALL=C comm -23 "$WORK/files-before" "$WORK/files-removed")
# Kept on remove, by design: the configuration, the queue, the user (and its group
# memberships); and, as for every package removed but not purged, dpkg's file list and
# postrm (to purge later) and deb-systemd-helper's record of the unit's enablement.
UNEXPECTED=$(printf '%s\n' "$ADDED" | grep -v -E '^(/etc/ariata[/ ]|/var/lib/ariata[/ ]|etc/(passwd|group|shadow|gshadow):(ariata|audio|dialout):|/var/lib/dpkg/info/ariata-agent\.(list|postrm) |/var/lib/systemd/deb-systemd-helper-enabled/ariata-agent\.service\.dsh-also )' | grep -v '^$' || true)
# The audio and dialout group lines change (the user joined them): what they were is "gone".
GONE_UNEXPECTED=$(printf '%s\n' "$GONE" | grep -v -E '^etc/(group|gshadow):(audio|dialout):' | grep -v '^$' || true)
if [ -n "$UNEXPECTED$GONE_UNEXPECTED" ]; then
  printf 'after remove, new: \n%s\nafter remove, gone:\n%s\n' "$UNEXPECTED" "$GONE_UNEXPECTED" >&2
  die "apt-get remove left more than the configuration, the queue and the user (above)"
fi
[ "$(inroot "$R" dpkg-query -W -f='${db:Status-Abbrev}' ariata-agent)" = "rc " ] || die "dpkg does not list ariata-agent as removed with its configuration"
ok "remove kept only: $(printf '%s\n' "$ADDED" | awk '{print $1}' | sed -E 's|^(/etc/ariata\|/var/lib/ariata\|/var/lib/systemd).*|\1|' | sort -u | tr '\n' ' ')"

say "apt-get purge"
inroot "$R" apt-get purge -y -q ariata-agent > "$WORK/purge.log" 2>&1 || { cat "$WORK/purge.log" >&2; die "apt-get purge failed"; }
snapshot "$WORK/files-purged"
if ! diff -u "$WORK/files-before" "$WORK/files-purged" > "$WORK/purge.diff"; then
  cat "$WORK/purge.diff" >&2
  die "apt-get purge left something behind or changed the root (diff above: before the install, after the purge)"
fi
inroot "$R" dpkg-query -W ariata-agent >/dev/null 2>&1 && die "dpkg still knows ariata-agent after purge"
ok "after purge the root is as before the install: $(wc -l < "$WORK/files-before") paths and entries compared"

say "numbers"
printf '   %-56s %s\n' \
  ".deb size" "$DEB_SIZE bytes ($(awk -v s="$DEB_SIZE" 'BEGIN { printf "%.1f MB", s / 1e6 }'))" \
  "installed size" "$INSTALLED_KIB KiB ($(awk -v s="$INSTALLED_KIB" 'BEGIN { printf "%.1f MB", s * 1024 / 1e6 }'))" \
  "package build (scripts/build-deb.sh)" "$([ -n "$DEB_GIVEN" ] && echo "given (--deb); N+1 repacked in $REBUILD_SECONDS s" || echo "$BUILD_SECONDS s (rebuild as N+1: $REBUILD_SECONDS s)")" \
  "dependencies (apt-get satisfy, downloads included)" "$DEPS_SECONDS s" \
  "apt-get install ./…deb" "$INSTALL_SECONDS s" \
  "run: daemon start to all samples at the receiver ($STREAMS)" "$RUN_SECONDS s (daemon CPU $RUN_CPU s, peak RSS $RUN_HWM)" \
  "Virtues box over iroh: receiver, onboard, run to all samples" "$BOX_SECONDS s" \
  "install (dependencies included) to a verified onboard" "$INSTALL_TO_ONBOARD s" \
  "the whole test" "$(since "$TEST_START") s"
