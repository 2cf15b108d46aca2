#!/usr/bin/env bash
# Fetches the iroh library the bridge links against (ariata-iroh-bridge, the daemon's way
# to a Virtues box over iroh): libiroh_ffi.so from the PyPI package iroh==1.2.0 (the
# iroh-ffi bindings, iroh 1.4.1, MIT/Apache-2.0), checked against the SHA-256 pinned below.
#
#   scripts/fetch-iroh.sh [--arch amd64|arm64]
#
# Puts the library in .iroh/<arch>/lib/libiroh_ffi.so (Package.swift links the bridge
# against it) and the wheel's Python package in .iroh/<arch>/python (the reference
# receiver's box mode imports it); .iroh/ is not committed. The architecture defaults to this machine's.
# Idempotent: a library already there with the pinned checksum is kept. Downloads the
# wheel with `python3 -m pip download` (Debian: apt-get install python3-pip), so it needs
# PyPI or the mirror pip is configured for (PIP_INDEX_URL).
set -euo pipefail
SCRIPT_NAME=fetch-iroh
. "$(dirname "$0")/lib.sh"

VERSION=1.2.0
# The wheels on PyPI and the library inside each (sha256sum). To move to another version,
# change VERSION and these four, then run scripts/generate-iroh-bindings.sh.
WHEEL_SHA256_amd64=61222adc81745009f34ca1fed42633f6cac865c9ed35a4701eb8c0174cb8399a
WHEEL_SHA256_arm64=049eef820a5710093cb0cc9d645da00f69dfbf5b0ac7647741da2168b79d0c10
LIB_SHA256_amd64=93cacc4d2e3481c225f6de25599798ab1f221313a0ffd168fadf49cdc75ac7a1
LIB_SHA256_arm64=62c0e3216c1200f642ad32c3d38d891a9abe67cd9c77e22ddc14ecbaae9f3bc9

arch=
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) [ $# -ge 2 ] || die "--arch needs a value: amd64 or arm64"; arch=$2; shift 2 ;;
    --arch=*) arch=${1#--arch=}; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
if [ -z "$arch" ]; then
  case "$(uname -m)" in
    x86_64|amd64) arch=amd64 ;;
    aarch64|arm64) arch=arm64 ;;
    *) die "no iroh library for this machine ($(uname -m)): iroh $VERSION ships x86_64 and aarch64 only (no armv7)" ;;
  esac
fi
case "$arch" in
  amd64) platform=manylinux_2_28_x86_64 ;;
  arm64) platform=manylinux_2_28_aarch64 ;;
  *) die "--arch must be amd64 or arm64, not '$arch'" ;;
esac
wheel_sha_var=WHEEL_SHA256_$arch; lib_sha_var=LIB_SHA256_$arch
wheel_sha=${!wheel_sha_var}; lib_sha=${!lib_sha_var}

dest_dir=$REPO_ROOT/.iroh/$arch/lib
dest=$dest_dir/libiroh_ffi.so
need_tools "install coreutils" sha256sum
sha_of() { sha256sum "$1" | cut -d' ' -f1; }

python_dir=$REPO_ROOT/.iroh/$arch/python
if [ -f "$dest" ] && [ -f "$python_dir/iroh/iroh_ffi.py" ]; then
  if [ "$(sha_of "$dest")" = "$lib_sha" ]; then
    echo "fetch-iroh: ${dest#"$REPO_ROOT"/} is iroh $VERSION ($arch), checksum ok"
    exit 0
  fi
  echo "fetch-iroh: ${dest#"$REPO_ROOT"/} does not have the pinned checksum: fetching it again" >&2
fi

need_tools "install Python 3 (apt-get install python3)" python3
python3 -m pip --version >/dev/null 2>&1 \
  || die "pip is missing for python3: apt-get install python3-pip (or run scripts/install-deps.sh)"

work=$(mktemp -d)
at_exit "rm -rf '$work'"
wheel=iroh-$VERSION-py3-none-$platform.whl
echo "fetch-iroh: downloading $wheel"
python3 -m pip download --disable-pip-version-check --quiet --no-deps --only-binary=:all: \
  --platform "$platform" --dest "$work" "iroh==$VERSION" \
  || die "pip could not download iroh==$VERSION for $platform (network, or PIP_INDEX_URL?)"
[ -f "$work/$wheel" ] || die "pip downloaded something else than $wheel: $(ls "$work")"
got=$(sha_of "$work/$wheel")
[ "$got" = "$wheel_sha" ] || die "$wheel has SHA-256 $got, expected $wheel_sha: not using it"

# The library for the bridge, and the wheel's Python package (the same library with its
# ctypes bindings) for the reference receiver's box mode, which the tests run: unpacked
# here rather than pip-installed, so no Python environment of the system is touched.
python3 - "$work/$wheel" "$work/libiroh_ffi.so" "$work/python" <<'EOF' || die "could not extract iroh/ from $wheel"
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    with z.open("iroh/libiroh_ffi.so") as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
    for name in z.namelist():
        if name.startswith("iroh/") and not name.endswith("/"):
            z.extract(name, sys.argv[3])
EOF
got=$(sha_of "$work/libiroh_ffi.so")
[ "$got" = "$lib_sha" ] || die "libiroh_ffi.so in $wheel has SHA-256 $got, expected $lib_sha"

mkdir -p "$dest_dir"
chmod 0644 "$work/libiroh_ffi.so"
mv -f "$work/libiroh_ffi.so" "$dest.tmp"
mv -f "$dest.tmp" "$dest"
rm -rf "$python_dir"
mkdir -p "$(dirname "$python_dir")"
mv "$work/python" "$python_dir"
echo "fetch-iroh: iroh $VERSION ($arch) in ${dest#"$REPO_ROOT"/}"
