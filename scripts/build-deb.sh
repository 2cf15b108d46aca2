#!/usr/bin/env bash
# Builds the Debian package ariata-agent_<version>_<arch>.deb in the repository's root
# (or in $DEB_OUTPUT_DIR), for the architecture of the machine it runs on, or cross-built
# for another one (DEB_ARCH with a Swift SDK: scripts/build-debs.sh does that for arm64).
#
#   scripts/build-deb.sh            (or: make deb)
#
# The program is a release build with the Swift runtime, the standard library and
# Foundation linked statically, then stripped: the installed package needs no Swift, only
# the Debian libraries that dpkg-shlibdeps finds in the binary (its Depends). Everything
# else comes from the repository: the unit (systemd/), the service user (systemd/*.sysusers),
# the example configuration (etc/agent.toml, a conffile), the maintainer scripts and the
# copyright file (packaging/deb/); the completions and the man page are generated from the
# program's own command-line definition.
#
# The way to a Virtues box goes in too, in /usr/lib/ariata-agent/: ariata-iroh-bridge (a
# program of its own, docs/decisions/0009-iroh-bridge-process.md), built and stripped as the
# agent is, and the iroh library it links, libiroh_ffi.so (PyPI's iroh wheel for the
# package's architecture, its checksum pinned in scripts/fetch-iroh.sh; stripped as
# dh_strip strips a shared library). The bridge finds the library there through its
# RUNPATH, which is $ORIGIN alone (Package.swift's ARIATA_IROH_RPATH=origin).
#
# Environment:
#   ARIATA_DEB_VERSION   the package version (default: the agent's own version, read from
#                        the built program's --version, plus "-1"); the upgrade test uses
#                        it to package the same program as a newer version
#   DEB_VERSION_SUFFIX   appended to the default version: "+deb13" for the Debian 13 packages
#                        (so that one for Debian 12 upgrades to it with the system)
#   DEB_MAINTAINER       the Maintainer field, "Name <address>" (default: a placeholder)
#   DEB_SCRATCH          the SwiftPM scratch path (default .build-release)
#   DEB_OUTPUT_DIR       where the .deb goes (default: the repository's root)
#   DEB_JOBS             compiler jobs at once (default: one per core); 1 on a 1 GB board
#   SOURCE_DATE_EPOCH    the date of the changelog, the man page and the files (default:
#                        the last commit's date), so that the same tree gives the same package
#   DEB_READONLY_CONSTANTS  no: the program was linked without readonly-data.ld (a Swift
#                        older than 6.3, see Package.swift), so its constants are not checked
#   DEB_HOT_CODE_MIN_FOUND  the share (%) of hot-code.order that must be in the program
#                        (default 0: a stale list is a note, not a failure; a release sets
#                        90, docs/releasing.md; scripts/check-hot-code.sh --min-found)
#   DEB_UNIT_DIR         where the unit goes (default /lib/systemd/system, Debian 12's;
#                        /usr/lib/systemd/system for Debian 13)
#   DEB_COMMIT           the commit named in the changelog (default: git's HEAD; for a
#                        copy of the tree without .git)
#   ARIATA_IROH_LIB_DIR  where libiroh_ffi.so of the package's architecture is (default
#                        .iroh/<arch>/lib; when it is missing there, scripts/fetch-iroh.sh
#                        --arch <arch> fetches it, which needs pip and PyPI); it must have
#                        the checksum fetch-iroh.sh pins
# Cross-building (docs/development.md, "Packages for Debian 13 and arm64"):
#   DEB_ARCH             the package's Debian architecture (default: this machine's); when it
#                        differs, the next two are needed, the -dev packages of that
#                        architecture must be installed (dpkg --add-architecture) and
#                        <gnu-type>-strip/-objdump/-nm (binutils-<gnu-type>) on the PATH
#   DEB_SWIFT_BUILD_ARGS more `swift build` arguments, split on spaces: for a cross build
#                        "--swift-sdks-path DIR --swift-sdk ID"
#   DEB_RUN_PROGRAM      ariata-agent built from the same tree for this machine: what the
#                        package's --version, completions and man page are read from, since
#                        the cross-built program does not run here
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh

SCRATCH=${DEB_SCRATCH:-.build-release}
OUT_DIR=${DEB_OUTPUT_DIR:-$ROOT}
# A placeholder (.invalid is reserved, RFC 2606): whoever publishes packages sets DEB_MAINTAINER.
MAINTAINER=${DEB_MAINTAINER:-Ariata agent maintainers <maintainers@ariata.invalid>}
PACKAGE=ariata-agent

# --- what the build needs -----------------------------------------------------------
need() {  # need COMMAND DEBIAN-PACKAGE
  command -v "$1" >/dev/null 2>&1 ||
    die "'$1' is missing: install it with 'sudo apt-get install $2' (or 'sudo scripts/install-deps.sh --package')"
}
command -v swift >/dev/null 2>&1 ||
  die "'swift' is not on the PATH: install a Swift 6 toolchain (https://www.swift.org/install/linux/) and add its usr/bin to PATH"
need dpkg-deb dpkg
need dpkg-shlibdeps dpkg-dev
need dpkg-gencontrol dpkg-dev
ARCH=${DEB_ARCH:-$(dpkg --print-architecture)}
BUILD_ARCH=$(dpkg --print-architecture)
CROSS=false
BINUTILS_PREFIX=""
if [ "$ARCH" != "$BUILD_ARCH" ]; then
  CROSS=true
  GNU_TYPE=$(dpkg-architecture -a"$ARCH" -qDEB_HOST_GNU_TYPE 2>/dev/null) || die "DEB_ARCH=$ARCH is not a Debian architecture"
  BINUTILS_PREFIX="$GNU_TYPE-"
  [ -n "${DEB_SWIFT_BUILD_ARGS:-}" ] ||
    die "DEB_ARCH=$ARCH is not this machine's ($BUILD_ARCH): set DEB_SWIFT_BUILD_ARGS to the Swift SDK for it (--swift-sdks-path DIR --swift-sdk ID)"
  [ -x "${DEB_RUN_PROGRAM:-}" ] ||
    die "a cross build needs DEB_RUN_PROGRAM: ariata-agent built from the same tree for $BUILD_ARCH (its --version, completions and man page go into the package)"
  need "${BINUTILS_PREFIX}strip" "binutils-$GNU_TYPE"
  need "${BINUTILS_PREFIX}objdump" "binutils-$GNU_TYPE"
  need "${BINUTILS_PREFIX}nm" "binutils-$GNU_TYPE"
else
  need strip binutils
  need objdump binutils
  need ldd libc-bin
fi
need gzip gzip
pkg-config --exists libcurl libgps alsa libopusenc ogg libqrencode sqlite3 2>/dev/null ||
  die "the C libraries' -dev packages are missing ($ARCH): run 'sudo scripts/install-deps.sh --build-only'"
need sha256sum coreutils

# The iroh library of the package's architecture: the bridge links it, the package installs
# it. Only the one scripts/fetch-iroh.sh pins goes into a package.
case "$ARCH" in
  amd64|arm64) ;;
  *) die "no iroh library for $ARCH (PyPI's iroh wheels are x86_64 and aarch64 only): the package needs it for the Virtues box bridge" ;;
esac
IROH_LIB_DIR=${ARIATA_IROH_LIB_DIR:-.iroh/$ARCH/lib}
IROH_SHA256=$(sed -n "s/^LIB_SHA256_$ARCH=//p" scripts/fetch-iroh.sh)
[ -n "$IROH_SHA256" ] || die "scripts/fetch-iroh.sh pins no LIB_SHA256_$ARCH"
iroh_sha() { sha256sum "$IROH_LIB_DIR/libiroh_ffi.so" 2>/dev/null | cut -d' ' -f1; }
if [ -z "${ARIATA_IROH_LIB_DIR:-}" ] && [ "$(iroh_sha)" != "$IROH_SHA256" ]; then
  bash scripts/fetch-iroh.sh --arch "$ARCH" ||
    die "could not fetch the iroh library for $ARCH (above): run 'scripts/fetch-iroh.sh --arch $ARCH' where PyPI is in reach"
fi
[ -f "$IROH_LIB_DIR/libiroh_ffi.so" ] || die "$IROH_LIB_DIR/libiroh_ffi.so is missing: run 'scripts/fetch-iroh.sh --arch $ARCH'"
[ "$(iroh_sha)" = "$IROH_SHA256" ] ||
  die "$IROH_LIB_DIR/libiroh_ffi.so is not the iroh library scripts/fetch-iroh.sh pins for $ARCH (SHA-256 $(iroh_sha), expected $IROH_SHA256)"
# Package.swift links the bridge against this directory, with the RUNPATH $ORIGIN alone.
export ARIATA_IROH_LIB_DIR=$IROH_LIB_DIR ARIATA_IROH_RPATH=origin

START=$(date +%s.%N)
TOOLCHAIN=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")   # e.g. /opt/swift/usr

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

# --- the programs ---------------------------------------------------------------------
BRIDGE_NAME=ariata-iroh-bridge
say "building $PACKAGE and $BRIDGE_NAME (release, Swift runtime linked statically) in $SCRATCH"
# scripts/static-build.sh: function sections, -z relro -z now (Debian's hardening);
# --disable-local-rpath: no RUNPATH $ORIGIN of SwiftPM's (the agent has none; the bridge
# has the one Package.swift gives it).
EXTRA_ARGS=(--disable-local-rpath)
if [ -n "${DEB_JOBS:-}" ]; then EXTRA_ARGS+=(--jobs "$DEB_JOBS"); fi
# shellcheck disable=SC2206  # split on spaces, as documented above
if [ -n "${DEB_SWIFT_BUILD_ARGS:-}" ]; then EXTRA_ARGS+=($DEB_SWIFT_BUILD_ARGS); fi
bash scripts/static-build.sh --scratch-path "$SCRATCH" "$PACKAGE" "$BRIDGE_NAME" -- "${EXTRA_ARGS[@]}"
BIN_DIR=$(bash scripts/static-build.sh --show-bin-path --scratch-path "$SCRATCH" -- "${EXTRA_ARGS[@]}")
[ -x "$BIN_DIR/$PACKAGE" ] || die "the build did not produce $BIN_DIR/$PACKAGE"
[ -x "$BIN_DIR/$BRIDGE_NAME" ] || die "the build did not produce $BIN_DIR/$BRIDGE_NAME"

say "checking that the functions the daemon runs lie together at the start of its code"
# Package.swift links release builds with lld and link/hot-code.order
# (scripts/hot-code.sh): the objects that hold the functions the daemon runs come first
# (about the first half of the code; without the list they spread over all of it, and
# ~8 MB more of the program stays resident).
# The same check the test suite runs on its debug build (--unoptimized): scripts/check-hot-code.sh.
NM="${BINUTILS_PREFIX}nm" bash scripts/check-hot-code.sh --min-found "${DEB_HOT_CODE_MIN_FOUND:-0}" \
  $( [ "${DEB_READONLY_CONSTANTS:-yes}" = no ] && echo --writable-constants ) "$BIN_DIR/$PACKAGE" | sed 's/^/   /' || die "the hot-code order check failed (above)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ariata-deb.XXXXXX")
at_exit 'rm -rf "$WORK"'
PKG="$WORK/root"          # the package's file system
LIB_DIR=/usr/lib/$PACKAGE      # the bridge and its library, together (Sources/Upload/Transport/IrohBridge.swift)
install -d "$PKG/DEBIAN" "$PKG/usr/bin" "$PKG$LIB_DIR"
BIN="$PKG/usr/bin/$PACKAGE"
BRIDGE="$PKG$LIB_DIR/$BRIDGE_NAME"
IROH_LIB="$PKG$LIB_DIR/libiroh_ffi.so"
# What dh_strip does for a program: symbols and the .comment/.note sections go; the
# Swift metadata sections (allocated, needed at run time) stay.
"${BINUTILS_PREFIX}strip" --remove-section=.comment --remove-section=.note -o "$BIN" "$BIN_DIR/$PACKAGE"
"${BINUTILS_PREFIX}strip" --remove-section=.comment --remove-section=.note -o "$BRIDGE" "$BIN_DIR/$BRIDGE_NAME"
# ...and for a shared library: --strip-unneeded keeps the dynamic symbols the bridge calls.
# (The wheel's library keeps its symbol table: 18.6 MB on amd64, 15.2 MB stripped.)
"${BINUTILS_PREFIX}strip" --strip-unneeded --remove-section=.comment --remove-section=.note -o "$IROH_LIB" "$IROH_LIB_DIR/libiroh_ffi.so"
chmod 0755 "$BIN" "$BRIDGE"
chmod 0644 "$IROH_LIB"

say "checking that the programs need no Swift library, and that the bridge finds iroh's beside it"
for program in "$BIN" "$BRIDGE"; do
  echo "   ${program#"$PKG"}:"
  if $CROSS; then
    # ldd runs the program's loader, which is not this machine's: the libraries it names.
    LDD=$("${BINUTILS_PREFIX}objdump" -p "$program" | awk '$1 == "NEEDED" { print $2 }') ||
      die "${BINUTILS_PREFIX}objdump failed on $program"
    [ -n "$LDD" ] || die "$program names no library: not a dynamically linked $ARCH program?"
  else
    LDD=$(ldd "$program") || die "ldd failed on $program: is it a dynamically linked program of this architecture ($ARCH)?"
  fi
  printf '%s\n' "$LDD" | sed 's/^/     /'
  if printf '%s\n' "$LDD" | grep -q 'not found'; then
    die "a library $program needs is not installed (see 'not found' above)"
  fi
  if printf '%s\n' "$LDD" | grep -F -e "$TOOLCHAIN" -e "/swift" ||
     printf '%s\n' "$LDD" | grep -E '(libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|libXCTest)[^ ]*\.so'; then
    die "$program still loads a library of the Swift toolchain ($TOOLCHAIN); the package would not run without Swift. Is --static-swift-stdlib supported by this toolchain?"
  fi
done
if "${BINUTILS_PREFIX}objdump" -p "$BIN" | grep -E '^\s*(RPATH|RUNPATH)\s'; then
  die "the program has an RPATH/RUNPATH (above) pointing into the build machine; it must have none"
fi
# Debian's hardening (lintian: hardening-no-relro): GNU ld makes no RELRO segment for a Swift
# program (the toolchain's .rodata is writable); Package.swift links both with lld.
for program in "$BIN" "$BRIDGE"; do
  grep -q GNU_RELRO <<< "$("${BINUTILS_PREFIX}readelf" -lW "$program")" ||
    die "$program has no RELRO segment: linked with GNU ld instead of lld (Package.swift, -use-ld=lld)?"
done
if "${BINUTILS_PREFIX}objdump" -p "$IROH_LIB" | grep -E '^\s*(RPATH|RUNPATH)\s'; then
  die "libiroh_ffi.so has an RPATH/RUNPATH (above); the wheel's has none"
fi
# The bridge's search path is its own directory and nothing else: no path of this machine
# (Package.swift adds .iroh/<arch>/lib only without ARIATA_IROH_RPATH=origin).
BRIDGE_RUNPATH=$("${BINUTILS_PREFIX}objdump" -p "$BRIDGE" | awk '$1 == "RPATH" || $1 == "RUNPATH" { print $1, $2 }')
[ "$BRIDGE_RUNPATH" = 'RUNPATH $ORIGIN' ] ||
  die "$BRIDGE_NAME's search path is '$BRIDGE_RUNPATH', not 'RUNPATH \$ORIGIN' alone (Package.swift, ARIATA_IROH_RPATH)"
grep -qx libiroh_ffi.so <<< "$("${BINUTILS_PREFIX}objdump" -p "$BRIDGE" | awk '$1 == "NEEDED" { print $2 }')" ||
  die "$BRIDGE_NAME does not name libiroh_ffi.so among its libraries"
if ! $CROSS; then
  BRIDGE_LDD=$(ldd "$BRIDGE")
  grep -qF "libiroh_ffi.so => $IROH_LIB " <<< "$BRIDGE_LDD" ||
    die "$BRIDGE_NAME does not load the library beside it: $(grep iroh <<< "$BRIDGE_LDD")"
  BRIDGE_VERSION=$("$BRIDGE" --version) || die "'$BRIDGE_NAME --version' failed"
  ok "$BRIDGE_VERSION; RUNPATH \$ORIGIN, libiroh_ffi.so from $LIB_DIR"
fi

# What runs here: the packaged program, or for a cross build the same tree built for this machine.
RUN=${DEB_RUN_PROGRAM:-$BIN}
AGENT_VERSION=$("$RUN" --version) || die "'$RUN --version' failed"
[[ $AGENT_VERSION =~ ^[0-9][0-9A-Za-z.+~]*$ ]] ||
  die "the program's --version printed '$AGENT_VERSION', not a version (Sources/AgentCore/Identity/AgentVersion.swift)"
VERSION=${ARIATA_DEB_VERSION:-$AGENT_VERSION-1${DEB_VERSION_SUFFIX:-}}
say "package $PACKAGE $VERSION for $ARCH (agent version $AGENT_VERSION)"

# --- files ----------------------------------------------------------------------------
say "assembling the files"
# Debian 12 installs units in /lib/systemd/system; Debian 13 (merged /usr) in /usr/lib, and
# its lintian calls /lib an aliased location (an error).
UNIT_DIR=${DEB_UNIT_DIR:-/lib/systemd/system}
install -d "$PKG$UNIT_DIR"
sed -e 's|^ExecStart=/usr/local/bin/|ExecStart=/usr/bin/|' \
    -e 's|^# ariata-agent: the system service.*|# ariata-agent: the system service, installed by the ariata-agent package.|' \
    systemd/ariata-agent.service > "$PKG$UNIT_DIR/$PACKAGE.service"
grep -q '^ExecStart=/usr/bin/ariata-agent run' "$PKG$UNIT_DIR/$PACKAGE.service" ||
  die "systemd/ariata-agent.service: its ExecStart no longer starts /usr/local/bin/ariata-agent; update the sed in $0"
# The user unit (a laptop's own account, docs/install.md "Laptop or board"), for every
# user; `systemctl --user enable` is each person's choice (onboard --user-service).
install -d "$PKG/usr/lib/systemd/user"
sed -e 's|^ExecStart=%h/.local/bin/|ExecStart=/usr/bin/|' \
    -e 's|^# Install: make install-user.*|# Installed by the ariata-agent package. Set it up as yourself (no sudo) with|' \
    systemd/user/ariata-agent.service > "$PKG/usr/lib/systemd/user/$PACKAGE.service"
grep -q '^ExecStart=/usr/bin/ariata-agent run' "$PKG/usr/lib/systemd/user/$PACKAGE.service" ||
  die "systemd/user/ariata-agent.service: its ExecStart no longer starts %h/.local/bin/ariata-agent; update the sed in $0"
install -D -m 0644 systemd/ariata-agent.sysusers "$PKG/usr/lib/sysusers.d/$PACKAGE.conf"
install -D -m 0644 packaging/deb/ariata-agent.tmpfiles "$PKG/usr/lib/tmpfiles.d/$PACKAGE.conf"
# A conffile: dpkg keeps the administrator's version on upgrades. postinst makes it the
# service user's, mode 0600 (the user exists only then).
install -D -m 0644 etc/agent.toml "$PKG/etc/ariata/agent.toml"

# A completion file is sourced, not run: no #! line (lintian: bash-completion-with-hashbang).
"$RUN" --generate-completion-script bash | sed '1{/^#!/d}' > "$WORK/bash"
"$RUN" --generate-completion-script zsh > "$WORK/zsh"
"$RUN" --generate-completion-script fish > "$WORK/fish"
install -D -m 0644 "$WORK/bash" "$PKG/usr/share/bash-completion/completions/$PACKAGE"
install -D -m 0644 "$WORK/zsh" "$PKG/usr/share/zsh/vendor-completions/_$PACKAGE"
install -D -m 0644 "$WORK/fish" "$PKG/usr/share/fish/vendor_completions.d/$PACKAGE.fish"

# The man page, from the command's own definition by swift-argument-parser's
# generate-manual tool (what its GenerateManual plugin runs; the plugin itself would
# rebuild every product of the package in another configuration first).
say "generating the man page"
PARSER="$SCRATCH/checkouts/swift-argument-parser"
[ -f "$PARSER/Tools/generate-manual/GenerateManual.swift" ] ||
  die "$PARSER has no Tools/generate-manual: is swift-argument-parser still a dependency?"
swift build -c debug --package-path "$PARSER" --scratch-path "$SCRATCH/generate-manual" --product generate-manual \
  > "$WORK/generate-manual-build.log" 2>&1 || { cat "$WORK/generate-manual-build.log" >&2; die "building generate-manual failed (above)"; }
GENERATE_MANUAL=$(swift build -c debug --package-path "$PARSER" --scratch-path "$SCRATCH/generate-manual" --show-bin-path)/generate-manual
mkdir "$WORK/man"
"$GENERATE_MANUAL" "$RUN" --section 1 --date "$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)" \
  --authors "$MAINTAINER" --output-directory "$WORK/man"
[ -s "$WORK/man/$PACKAGE.1" ] || die "generate-manual wrote no $PACKAGE.1"
install -d "$PKG/usr/share/man/man1"
# generate-manual separates paragraphs with empty lines, which groff warns about in mdoc:
# they become .Pp, mdoc's paragraph break.
sed 's/^$/.Pp/' "$WORK/man/$PACKAGE.1" | gzip -9n > "$PKG/usr/share/man/man1/$PACKAGE.1.gz"

DOC="$PKG/usr/share/doc/$PACKAGE"
install -D -m 0644 packaging/deb/copyright "$DOC/copyright"
COMMIT=${DEB_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
{
  printf '%s (%s) unstable; urgency=medium\n\n' "$PACKAGE" "$VERSION"
  printf '  * ariata-agent %s, built by scripts/build-deb.sh\n    from commit %s.\n\n' "$AGENT_VERSION" "$COMMIT"
  printf ' -- %s  %s\n' "$MAINTAINER" "$(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")"
} > "$WORK/changelog"
gzip -9n < "$WORK/changelog" > "$DOC/changelog.Debian.gz"

install -D -m 0644 packaging/deb/lintian-overrides "$PKG/usr/share/lintian/overrides/$PACKAGE"

# --- control ----------------------------------------------------------------------------
say "computing Depends (dpkg-shlibdeps) and the control file (dpkg-gencontrol)"
for script in postinst prerm postrm; do
  install -m 0755 "packaging/deb/$script" "$PKG/DEBIAN/$script"
done
echo /etc/ariata/agent.toml > "$PKG/DEBIAN/conffiles"
# dpkg-shlibdeps and dpkg-gencontrol work in a source tree: a minimal debian/ here.
install -d "$WORK/src/debian"
cp "$WORK/changelog" "$WORK/src/debian/changelog"
cat > "$WORK/src/debian/control" <<CONTROL
Source: $PACKAGE
Section: utils
Priority: optional
Maintainer: $MAINTAINER
Standards-Version: 4.6.2
Homepage: https://github.com/ariata/ariata-agent
Rules-Requires-Root: no

Package: $PACKAGE
Architecture: any
Depends: \${shlibs:Depends}
Recommends: geoclue-2.0, bluez
Suggests: gpsd, alsa-utils
Description: sensor collection daemon for the Ariata personal data platform
 ariata-agent captures location (from gpsd, or GeoClue on a laptop without a
 GPS receiver), microphone audio (ALSA, encoded to Opus) and health samples
 (from files or serial devices), writes every capture to a local SQLite
 queue first, and uploads the queue to your own
 Ariata server, so nothing is lost while the network or the server is away.
 .
 A Virtues box is reached over iroh through a helper program with its
 library (iroh-ffi), both in /usr/lib/ariata-agent; only the helper loads it.
 .
 After installing, run "sudo ariata-agent onboard" to set the server and the
 device token; it writes /etc/ariata/agent.toml and offers to start the service.
CONTROL
(
  cd "$WORK/src"
  # dpkg-architecture: for a cross build, the libraries and Architecture of $ARCH.
  # All three: the agent, the bridge and the iroh library (which needs glibc 2.28 and
  # libgcc_s). The bridge's libiroh_ffi.so is found through its $ORIGIN in the package's
  # own tree, a private directory: no dependency for it.
  dpkg-architecture -a"$ARCH" -c dpkg-shlibdeps -Tdebian/substvars "$BIN" "$BRIDGE" "$IROH_LIB"
  # The release link packs relative relocations (Package.swift): the program then needs
  # glibc 2.36's loader (the version GLIBC_ABI_DT_RELR), which names no symbol, so
  # dpkg-shlibdeps does not count it.
  if "${BINUTILS_PREFIX}readelf" -V "$BIN" "$BRIDGE" "$IROH_LIB" | grep GLIBC_ABI_DT_RELR >/dev/null; then
    LIBC_MIN=$(sed -n 's/.*libc6 (>= \([^)]*\)).*/\1/p' debian/substvars)
    if [ -n "$LIBC_MIN" ] && dpkg --compare-versions "$LIBC_MIN" lt 2.36; then
      sed -i "s/libc6 (>= $LIBC_MIN)/libc6 (>= 2.36)/" debian/substvars
    fi
  fi
  dpkg-architecture -a"$ARCH" -c dpkg-gencontrol -p"$PACKAGE" -P"$PKG" -Tdebian/substvars -v"$VERSION"
)
grep -q '^Depends: .*libc6' "$PKG/DEBIAN/control" ||
  die "dpkg-shlibdeps found no dependencies: $(grep '^Depends' "$PKG/DEBIAN/control" || echo none)"

(cd "$PKG" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum > DEBIAN/md5sums)
chmod 0644 "$PKG/DEBIAN/md5sums" "$PKG/DEBIAN/conffiles" "$PKG/DEBIAN/control"
find "$PKG" -type d -exec chmod 0755 {} +
find "$PKG" -newermt "@$SOURCE_DATE_EPOCH" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

DEB="$OUT_DIR/${PACKAGE}_${VERSION}_${ARCH}.deb"
mkdir -p "$OUT_DIR"
dpkg-deb --build --root-owner-group -Zxz "$PKG" "$DEB" >/dev/null

END=$(date +%s.%N)
SIZE=$(stat -c %s "$DEB")
INSTALLED=$(sed -n 's/^Installed-Size: //p' "$PKG/DEBIAN/control")
# The line scripts/build-debs.sh reads the package's path from.
printf '== built %s\n' "$DEB"
sed -n 's/^\(Version\|Architecture\|Installed-Size\|Depends\): /   \1: /p' "$PKG/DEBIAN/control"
awk -v size="$SIZE" -v inst="$INSTALLED" -v prog="$(stat -c %s "$BIN")" -v bridge="$(stat -c %s "$BRIDGE")" \
    -v lib="$(stat -c %s "$IROH_LIB")" -v t0="$START" -v t1="$END" 'BEGIN {
  printf "   .deb size: %d bytes (%.1f MB); installed size: %d KiB (%.1f MB), of which the program %.1f MB, the iroh bridge %.1f MB and its library %.1f MB; built in %.0f s\n",
    size, size / 1e6, inst, inst * 1024 / 1e6, prog / 1e6, bridge / 1e6, lib / 1e6, t1 - t0 }'
