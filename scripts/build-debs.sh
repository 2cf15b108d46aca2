#!/usr/bin/env bash
# Builds the agent's three Debian packages (docs/install.md says which fits which system):
#
#   ariata-agent_<v>-1_amd64.deb         Debian 12 (bookworm) amd64: scripts/build-deb.sh with
#                                        this machine's Swift, as `make deb`
#   ariata-agent_<v>-1+deb13_amd64.deb   Debian 13 (trixie) amd64, built in a trixie root with
#                                        Debian 13's own Swift (swiftlang 6.0.3)
#   ariata-agent_<v>-1+deb13_arm64.deb   Debian 13 arm64 (Raspberry Pi OS trixie), cross-built
#                                        in the same root with a Swift SDK for arm64
#
#   sudo scripts/build-debs.sh [--cache DIR] [--output DIR] [--only NAME]...   (or: sudo make debs)
#
#   --cache DIR   where the trixie build root is kept between runs (default
#                 /var/cache/ariata-build; about 4 GB); a second run reuses it and the
#                 build directories in it, so only what changed is compiled again
#   --output DIR  where the packages go (default: the repository's root)
#   --only NAME   build only bookworm-amd64, trixie-amd64 or trixie-arm64 (repeatable;
#                 trixie-arm64 builds trixie-amd64 too: its man page and completions)
#
# Runs as root (debootstrap, chroot, mount). The trixie root is made once: debootstrap
# --variant=minbase, `dpkg --add-architecture arm64`, swiftlang and the -dev packages of both
# architectures from Debian's mirror, the arm64 swiftlang's runtime and modules unpacked in
# /opt/swift-arm64 and a Swift SDK bundle over them (packaging/swift6.0/sdk/). Swift 6.0 cannot
# read the manifests or sources of three dependencies as this machine's package mirror has
# them: each is cloned into the root and patched there (packaging/swift6.0/*.patch, each says
# why), and SwiftPM's mirror setting points the build at the clones. The tree is copied into
# the root as git lists it (tracked and new files, nothing ignored), so the packages are
# built from exactly the working tree, and the iroh library of each architecture
# (scripts/fetch-iroh.sh) is copied in beside it. docs/releasing.md, "Packages for Debian 13
# and arm64".
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
REPO=$(pwd)

CACHE=/var/cache/ariata-build
OUTPUT=$REPO
ONLY=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) CACHE=$2; shift 2 ;;
    --output) OUTPUT=$2; shift 2 ;;
    --only) ONLY+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-debs.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
MIRROR=${DEB_BUILD_MIRROR:-http://deb.debian.org/debian}
SUITE=trixie
RT="$CACHE/$SUITE-amd64"          # the build root
# Bump when the root's recipe below changes: an older root is then made again.
ROOT_RECIPE=1

wanted() { [ ${#ONLY[@]} -eq 0 ] && return 0; local n; for n in "${ONLY[@]}"; do [ "$n" = "$1" ] && return 0; done; return 1; }
for n in ${ONLY[@]+"${ONLY[@]}"}; do
  case "$n" in bookworm-amd64|trixie-amd64|trixie-arm64) ;; *) die "--only takes bookworm-amd64, trixie-amd64 or trixie-arm64, not '$n'" ;; esac
done
[ "$(id -u)" -eq 0 ] || die "run as root: debootstrap, chroot and mount need it (sudo $0)"
[ "$(dpkg --print-architecture)" = amd64 ] || die "the Debian 13 builds run on an amd64 machine"
need_tools "run 'sudo scripts/install-deps.sh' (it installs debootstrap)" debootstrap chroot mount git python3 tar
mkdir -p "$OUTPUT"
OUTPUT=$(readlink -f "$OUTPUT")
BUILT=()
TIMES=()

# --- Debian 12 amd64: the machine's toolchain, as `make deb` -----------------------------
if wanted bookworm-amd64; then
  say "Debian 12 amd64 (scripts/build-deb.sh with $(swift --version 2>/dev/null | head -1))"
  T=$(date +%s.%N)
  DEB_OUTPUT_DIR="$OUTPUT" bash scripts/build-deb.sh | tee "$OUTPUT/.build-deb-bookworm.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || die "the Debian 12 package failed (above)"
  BUILT+=("$(sed -n 's/^== built //p' "$OUTPUT/.build-deb-bookworm.log")")
  rm -f "$OUTPUT/.build-deb-bookworm.log"
  TIMES+=("bookworm-amd64 $(since "$T") s")
fi
wanted trixie-amd64 || wanted trixie-arm64 || { printf '%s\n' "${BUILT[@]}"; exit 0; }

# --- the trixie build root ----------------------------------------------------------------
MOUNTED=()
mount_root() {  # mount_root DIR: proc and dev for apt and swift
  mount -t proc proc "$1/proc"; MOUNTED+=("$1/proc")
  mount --rbind /dev "$1/dev"; mount --make-rslave "$1/dev"; MOUNTED+=("$1/dev")
}
unmount_roots() {
  local m
  for m in ${MOUNTED[@]+"${MOUNTED[@]}"}; do umount -R "$m" 2>/dev/null || umount -l "$m"; done
}
at_exit unmount_roots

# The C libraries the agent links, as -dev packages (Package.swift's system libraries; the
# same list as scripts/install-deps.sh), for both architectures; arm64 also needs the C
# library, the GCC runtime and libstdc++ (TOMLKit's C++) to link against.
DEV_PACKAGES=(libcurl4-openssl-dev zlib1g-dev libssl-dev libgps-dev libasound2-dev libopus-dev
              libopusenc-dev libogg-dev libqrencode-dev libsqlite3-dev libsystemd-dev libstdc++-14-dev)
ARM64_PACKAGES=("${DEV_PACKAGES[@]/%/:arm64}" libc6-dev:arm64 libgcc-14-dev:arm64)

make_root() {
  local new="$RT.new"
  rm -rf --one-file-system "$new"
  say "making the trixie build root in $RT (once; about 6 minutes and 4 GB)"
  debootstrap --variant=minbase "$SUITE" "$new" "$MIRROR" > "$CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed (above; all of it in $CACHE/debootstrap.log)"; }
  cp /etc/resolv.conf "$new/etc/resolv.conf"
  # No manuals or documentation: the amd64 and arm64 -dev packages would clash on them
  # (a man page compressed differently), and a build root has no use for them.
  cat > "$new/etc/dpkg/dpkg.cfg.d/01-ariata-build" <<'CFG'
path-exclude=/usr/share/man/*
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/info/*
CFG
  mount_root "$new"
  inroot "$new" dpkg --add-architecture arm64
  inroot "$new" apt-get update -q > "$CACHE/apt.log" 2>&1 || { cat "$CACHE/apt.log" >&2; die "apt-get update in the root failed"; }
  # swiftlang brings its own clang and lld; dpkg-dev for dpkg-shlibdeps; lintian to check
  # the packages with Debian 13's rules; binutils-aarch64-linux-gnu strips the arm64 program.
  inroot "$new" apt-get install -y -q --no-install-recommends swiftlang pkg-config dpkg-dev git gzip \
    binutils binutils-aarch64-linux-gnu lintian "${DEV_PACKAGES[@]}" "${ARM64_PACKAGES[@]}" >> "$CACHE/apt.log" 2>&1 ||
    { tail -30 "$CACHE/apt.log" >&2; die "installing Swift and the -dev packages in the root failed (above)"; }
  # The arm64 Swift runtime and modules (static and shared) from arm64's swiftlang and
  # libswiftlang, unpacked (not installed: they would replace the amd64 toolchain's files).
  mkdir -p "$new/tmp/swift-arm64"
  (cd "$new/tmp/swift-arm64" && inroot "$new" sh -c 'cd /tmp/swift-arm64 && apt-get download -q swiftlang:arm64 libswiftlang:arm64') \
    >> "$CACHE/apt.log" 2>&1 || { tail -5 "$CACHE/apt.log" >&2; die "downloading the arm64 swiftlang failed"; }
  local deb
  for deb in "$new"/tmp/swift-arm64/*.deb; do dpkg-deb -x "$deb" "$new/tmp/swift-arm64/x"; done
  mkdir -p "$new/opt/swift-arm64/lib"
  # host/ (compiler plugins built for arm64) and embedded/ are of no use to a cross build.
  for d in swift swift_static clang; do cp -a "$new/tmp/swift-arm64/x/usr/libexec/swift/lib/$d" "$new/opt/swift-arm64/lib/"; done
  rm -rf "$new/opt/swift-arm64/lib/swift/host" "$new/opt/swift-arm64/lib/swift/embedded" "$new/tmp/swift-arm64"
  inroot "$new" apt-get clean
  for m in "${MOUNTED[@]}"; do umount -R "$m" 2>/dev/null || umount -l "$m"; done
  MOUNTED=()
  echo "$ROOT_RECIPE" > "$new/.ariata-build-root"
  rm -rf --one-file-system "$RT"
  mv "$new" "$RT"
}

mkdir -p "$CACHE"
T=$(date +%s.%N)
if [ "$(cat "$RT/.ariata-build-root" 2>/dev/null)" != "$ROOT_RECIPE" ]; then
  make_root
  TIMES+=("trixie build root made in $(since "$T") s")
else
  echo "== the trixie build root: $RT (kept from an earlier run)"
fi
cp /etc/resolv.conf "$RT/etc/resolv.conf"
mount_root "$RT"
# A root kept from before a C library was added to the list gets it now (apt-get is a no-op
# when everything is there).
missing=$(inroot "$RT" dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' "${DEV_PACKAGES[@]}" "${ARM64_PACKAGES[@]}" 2>&1 |
          grep -vc '^ii ' || true)
if [ "$missing" != 0 ]; then
  echo "   installing the -dev packages the kept root lacks"
  inroot "$RT" apt-get update -q > "$CACHE/apt.log" 2>&1 &&
    inroot "$RT" apt-get install -y -q --no-install-recommends "${DEV_PACKAGES[@]}" "${ARM64_PACKAGES[@]}" >> "$CACHE/apt.log" 2>&1 ||
    { tail -30 "$CACHE/apt.log" >&2; die "installing the -dev packages in the kept root failed (above)"; }
fi
inroot "$RT" swift --version 2>&1 | head -1 | sed 's/^/   /'

# The Swift SDK for arm64 (packaging/swift6.0/sdk: its paths name /opt/swift-arm64 and
# /opt/arm64-sysroot). The sysroot is the root's own /usr seen through a directory of its
# own: multiarch puts the arm64 headers and libraries there beside the amd64 ones, and
# the build directories (/build) stay outside it (the compiler takes modules found under
# the sysroot for the SDK's).
# Replaced only when they changed: a new SDK file makes SwiftPM build everything again.
SDK_BUNDLE=packaging/swift6.0/sdk/aarch64-debian-trixie.artifactbundle
if ! diff -r "$SDK_BUNDLE" "$RT/opt/ariata-swift-sdks/$(basename "$SDK_BUNDLE")" >/dev/null 2>&1; then
  rm -rf "$RT/opt/ariata-swift-sdks"
  mkdir -p "$RT/opt/ariata-swift-sdks"
  cp -a "$SDK_BUNDLE" "$RT/opt/ariata-swift-sdks/"
fi
mkdir -p "$RT/opt/arm64-sysroot"
[ -L "$RT/opt/arm64-sysroot/usr" ] || ln -s /usr "$RT/opt/arm64-sysroot/usr"
[ -L "$RT/opt/arm64-sysroot/lib" ] || ln -s /usr/lib "$RT/opt/arm64-sysroot/lib"

# --- the tree and its dependencies, patched for Swift 6.0 ------------------------------------
say "copying the tree into the root; cloning the dependencies, patched where packaging/swift6.0 says"
SRC="$RT/build/src"
rm -rf "$SRC"
mkdir -p "$SRC"
# Package.resolved stays out: its revisions are the unpatched ones.
git ls-files -z -co --exclude-standard | grep -zv '^Package.resolved$' | tar --null -T - -cf - | tar -xf - -C "$SRC"
# The iroh library the bridge links and the packages install (.iroh/ is not in git): fetched
# here for each architecture built (scripts/fetch-iroh.sh, checksums pinned; the root has no
# pip), then copied into the tree, where scripts/build-deb.sh checks it against the pin again.
for arch in amd64 arm64; do
  wanted "trixie-$arch" || [ "$arch" = amd64 ] || continue
  bash scripts/fetch-iroh.sh --arch "$arch" || die "could not fetch the iroh library for $arch (above)"
  install -D -m 0644 ".iroh/$arch/lib/libiroh_ffi.so" "$SRC/.iroh/$arch/lib/libiroh_ffi.so"
done
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo "+changes")
DEPS="$RT/build/deps"
rm -rf "$DEPS"
mkdir -p "$DEPS"
# Every dependency Package.resolved pins, at the pinned version, from the same copies the
# machine's own build reads (git's url.<base>.insteadOf for github.com); the patched ones get
# a commit of their own (fixed author and date: the same patch gives the same commit) and
# the version's tag moves onto it.
python3 - Package.resolved > "$CACHE/pins" <<'PY'
import json, sys
for pin in json.load(open(sys.argv[1]))["pins"]:
    print(pin["location"], pin["state"]["version"])
PY
MIRROR_ARGS=()
while read -r url version; do
  base=${url%.git}
  name=${base##*/}
  git clone -q --branch "$version" "$base" "$DEPS/$name" 2>/dev/null ||
    git clone -q --branch "$version" "$base.git" "$DEPS/$name" || die "cannot clone $url at $version"
  patch="packaging/swift6.0/$name.patch"
  if [ -f "$patch" ]; then
    git -C "$DEPS/$name" apply --index "$REPO/$patch" || die "$patch does not apply to $name $version"
    GIT_AUTHOR_DATE="1000000000 +0000" GIT_COMMITTER_DATE="1000000000 +0000" git -C "$DEPS/$name" \
      -c user.name=build-debs -c user.email=build-debs@ariata.invalid commit -q -m "$patch" || die "committing $patch in $name failed"
    git -C "$DEPS/$name" tag -f "$version" >/dev/null
    echo "   $name $version, patched: $(sed -n 's/^# Why: //p' "$patch" | head -1)"
  fi
  # Both spellings: the root package names some without .git, the dependencies with it.
  MIRROR_ARGS+=("$base" "/build/deps/$name" "$base.git" "/build/deps/$name")
done < "$CACHE/pins"
set -- "${MIRROR_ARGS[@]}"
while [ $# -gt 0 ]; do
  inroot "$RT" sh -c 'cd /build/src && swift package config set-mirror --original "$1" --mirror "$2"' sh "$1" "$2"
  shift 2
done
# When the dependencies changed (a patch, a version), what SwiftPM resolved and checked out
# before is stale: the tags moved. The clones' commits say whether they did.
STAMP=$(for d in "$DEPS"/*; do git -C "$d" rev-parse HEAD; done | sha256sum | cut -c1-16)
for scratch in "$RT/build/scratch-amd64" "$RT/build/scratch-arm64"; do
  if [ "$(cat "$scratch/.deps-stamp" 2>/dev/null)" != "$STAMP" ]; then
    rm -rf "$scratch/checkouts" "$scratch/repositories" "$scratch/workspace-state.json" "$RT/root/.swiftpm/cache" "$RT/root/.cache/org.swift.swiftpm"
    mkdir -p "$scratch" && echo "$STAMP" > "$scratch/.deps-stamp"
  fi
done

build_in_root() {  # build_in_root NAME ENV...: scripts/build-deb.sh in the root
  local name=$1; shift
  say "Debian 13 ${name#trixie-} (scripts/build-deb.sh in the root)"
  local t; t=$(date +%s.%N)
  rm -rf "$RT/build/out"
  mkdir -p "$RT/build/out"
  inroot "$RT" env "$@" SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" DEB_COMMIT="$COMMIT" DEB_OUTPUT_DIR=/build/out \
    DEB_VERSION_SUFFIX=+deb13 DEB_READONLY_CONSTANTS=no DEB_UNIT_DIR=/usr/lib/systemd/system bash /build/src/scripts/build-deb.sh 2>&1 | tee "$CACHE/build-$name.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || die "the $name package failed (above; the log is $CACHE/build-$name.log)"
  local deb; deb=$(ls "$RT"/build/out/*.deb)
  say "lintian $(basename "$deb") (Debian 13's)"
  inroot "$RT" lintian --fail-on error,warning --display-level '>=info' "/build/out/$(basename "$deb")" ||
    die "lintian found problems in the $name package (above)"
  cp "$deb" "$OUTPUT/"
  BUILT+=("$OUTPUT/$(basename "$deb")")
  TIMES+=("$name $(since "$t") s")
}

build_in_root trixie-amd64 DEB_SCRATCH=/build/scratch-amd64
if wanted trixie-arm64; then
  RUN_PROGRAM=$(inroot "$RT" sh -c 'cd /build/src && bash scripts/static-build.sh --show-bin-path --scratch-path /build/scratch-amd64 -- --disable-local-rpath')/ariata-agent
  # pkg-config (and SwiftPM's own reading of .pc files, which searches PKG_CONFIG_PATH before
  # the machine's default directories) takes the arm64 .pc files, their paths inside the sysroot.
  local_pc=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
  build_in_root trixie-arm64 DEB_SCRATCH=/build/scratch-arm64 DEB_ARCH=arm64 DEB_RUN_PROGRAM="$RUN_PROGRAM" \
    DEB_SWIFT_BUILD_ARGS="--swift-sdks-path /opt/ariata-swift-sdks --swift-sdk aarch64-debian-trixie" \
    PKG_CONFIG_PATH="$local_pc" PKG_CONFIG_LIBDIR="$local_pc" PKG_CONFIG_SYSROOT_DIR=/opt/arm64-sysroot
fi

say "built"
for deb in "${BUILT[@]}"; do
  printf '   %s  %s bytes  Depends: %s\n' "$(basename "$deb")" "$(stat -c %s "$deb")" "$(dpkg-deb -f "$deb" Depends)"
done
printf '   %s\n' "${TIMES[@]}"
echo "   the build root $RT: $(du -sh --one-file-system "$RT" | cut -f1) (remove it to start afresh)"
