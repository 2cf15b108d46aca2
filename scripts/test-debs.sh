#!/usr/bin/env bash
# The Debian 13 packages, tested as a user would meet them: each one by scripts/test-deb.sh
# in a clean, minimal root of its own release and architecture (trixie amd64; trixie arm64
# under qemu-user), with lintian, install, --version, --help, the man page, `onboard` against
# the reference receiver, a `run` that delivers all three streams (gpsd, an ALSA device and
# a health file in the root), the iroh bridge (files, ldd, RUNPATH, --version, --help) and a
# Virtues box paired and fed over iroh in a loopback-only network namespace (the bridge under
# qemu-user too on arm64), upgrade with the service running, remove and purge.
#
#   sudo scripts/test-debs.sh [--dir DIR] [--only ARCH]...   (or: sudo make test-debs)
#
#   --dir DIR     where the packages are (default: the repository's root, where
#                 scripts/build-debs.sh puts them); the newest ariata-agent_*+deb13_<arch>.deb
#   --only ARCH   amd64 or arm64 (repeatable; default both)
#
# The Debian 12 package is tested by scripts/test-deb.sh alone (CI runs it). arm64 programs
# run under qemu-user: qemu-user-static is installed from Debian's mirror when missing and
# its binfmt_misc entry enabled (binfmt_misc is mounted first when it is not). The minimal
# roots are kept as tar files in DEB_TEST_CACHE (default /var/cache/ariata-build/test-roots).
set -euo pipefail
cd "$(dirname "$0")/.."
SCRIPT_NAME=test-debs
DIE_PREFIX="FAIL: "
. scripts/lib.sh
DIR=$(pwd)
ONLY=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR=$2; shift 2 ;;
    --only) ONLY+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-debs.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#ONLY[@]} -gt 0 ] || ONLY=(amd64 arm64)
[ "$(id -u)" -eq 0 ] || die "run as root: debootstrap, chroot, mount and binfmt_misc need it (sudo $0)"
export DEB_TEST_CACHE=${DEB_TEST_CACHE:-/var/cache/ariata-build/test-roots}

enable_qemu_arm64() {
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
    die "cannot mount binfmt_misc: arm64 programs cannot run here"
  if ! command -v update-binfmts >/dev/null || [ ! -e /usr/libexec/qemu-binfmt/aarch64-binfmt-P ] &&
     ! command -v qemu-aarch64-static >/dev/null; then
    echo "== installing qemu-user-static and binfmt-support (arm64 programs under qemu-user)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-user-static binfmt-support > /dev/null ||
      die "installing qemu-user-static failed"
  fi
  [ "$(head -1 /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null)" = enabled ] || update-binfmts --enable qemu-aarch64 ||
    die "cannot enable qemu-aarch64 in binfmt_misc"
  [ "$(head -1 /proc/sys/fs/binfmt_misc/qemu-aarch64)" = enabled ] || die "qemu-aarch64 is not enabled in binfmt_misc"
}

RESULTS=()
for arch in "${ONLY[@]}"; do
  case "$arch" in amd64|arm64) ;; *) die "--only takes amd64 or arm64, not '$arch'" ;; esac
  deb=$(ls -t "$DIR"/ariata-agent_*+deb13_"$arch".deb 2>/dev/null | head -1) ||
    true
  [ -n "$deb" ] || die "no ariata-agent_*+deb13_$arch.deb in $DIR: build it first (sudo scripts/build-debs.sh)"
  [ "$arch" = amd64 ] || enable_qemu_arm64
  printf '\n\033[1m==== %s: Debian 13 %s%s\033[0m\n' "$(basename "$deb")" "$arch" "$([ "$arch" = arm64 ] && echo ' under qemu-user')"
  t0=$(date +%s)
  bash scripts/test-deb.sh --deb "$deb" --suite trixie --arch "$arch" --streams all ||
    die "$(basename "$deb") failed (above)"
  RESULTS+=("$(basename "$deb"): passed in $(( $(date +%s) - t0 )) s")
done
printf '\n'
printf 'test-debs: %s\n' "${RESULTS[@]}"
