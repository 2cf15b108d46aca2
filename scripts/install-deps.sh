#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages that building, testing and the demo need.
# Idempotent: packages already present are left alone. Run as root or through sudo.
set -euo pipefail

# Build: C libraries the agent links against (SwiftPM system library targets).
BUILD_PACKAGES=(
  pkg-config
  libsqlite3-dev
  libcurl4-openssl-dev
  libssl-dev
  zlib1g-dev
  libgps-dev
  libasound2-dev
  libopus-dev
  libogg-dev
  libopusenc-dev
  libqrencode-dev
  libsystemd-dev  # sd-bus: GeoClue, logind, NetworkManager, desktop notices
  python3-pip     # scripts/fetch-iroh.sh downloads the iroh library (ariata-iroh-bridge) with pip
)
# Test rigs and demo: real gpsd, socat ptys, ALSA file plugin data, speech, Opus tools,
# the reference receiver (python3), systemd-analyze for the unit checks.
TEST_PACKAGES=(
  gpsd
  socat
  alsa-utils
  espeak-ng
  sox
  opus-tools
  python3
  python3-jsonschema
  procps
  tmux
  python3-pexpect
  curl
  systemd
  openssl
  ca-certificates  # the system's CA directory, looked up by hash (CATrustTests)
  iproute2
  faketime      # the daemon's clock test: a wrong wall clock set right while it runs
  libfaketime
  libxml2-utils # xmllint: exported GPX validated against the GPX 1.1 schema
  gpsbabel      # a real GPX reader reads the export back
  prometheus    # promtool check metrics: the metrics file and status --prometheus
  python3-prometheus-client  # its parser reads the metrics back
  strace        # counts the fsyncs of an upload (SyncCommandTests)
  zbar-tools    # zbarimg reads back the QR code of onboard --link (OnboardLinkTests)
  librsvg2-bin  # rsvg-convert renders coverage --svg to PNG, read back by CoverageCommandTests
  # A real PipeWire session in the tests' own user session (PipeWireRig): the daemon,
  # WirePlumber, the PulseAudio stand-in with its module-pipe-source, ALSA's pipewire
  # plugin (which routes ALSA's default to it), pactl and pw-record, and a session D-Bus.
  pipewire
  pipewire-bin
  pipewire-alsa
  pipewire-pulse
  wireplumber
  pulseaudio-utils
  dbus-daemon
  # D-Bus services on the tests' private buses (DBusRig): GeoClue itself, and
  # python-dbusmock's logind, NetworkManager and notification-daemon templates.
  geoclue-2.0
  python3-dbusmock
)

# Packaging (scripts/build-deb.sh) and its test (scripts/test-deb.sh): Debian's own tools,
# a clean bookworm root to install the package into, and man to read its page.
PACKAGE_PACKAGES=(
  dpkg-dev
  binutils
  lintian
  debootstrap
  man-db
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else
    echo "install-deps: run as root or install sudo" >&2; exit 1; fi
fi

# (no option): everything; --build-only: what `make` needs; --package: what `make deb` needs.
wanted=("${BUILD_PACKAGES[@]}")
case "${1:-}" in
  --build-only) ;;
  --package) wanted+=(dpkg-dev binutils) ;;
  *) wanted+=("${TEST_PACKAGES[@]}" "${PACKAGE_PACKAGES[@]}") ;;
esac

missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#wanted[@]} packages already installed"
  "$(dirname "$0")/fetch-iroh.sh"  # the iroh library the bridge links (.iroh/, checksum pinned)
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
"$(dirname "$0")/fetch-iroh.sh"  # the iroh library the bridge links (.iroh/, checksum pinned)
# gpsd's package starts a system gpsd on port 2947; the tests run their own on free
# ports, so the system one is left as the package set it up.
