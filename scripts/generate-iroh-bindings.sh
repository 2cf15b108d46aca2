#!/usr/bin/env bash
# Generates the Swift bindings of the iroh library from the library itself:
# libiroh_ffi.so of the PyPI package iroh==1.2.0 (iroh-ffi, iroh 1.4.1), fetched and
# checked by scripts/fetch-iroh.sh, read by uniffi-bindgen 0.31.0 (PyPI uniffi-bindgen,
# the UniFFI version the library was built with) in library mode.
#
#   scripts/generate-iroh-bindings.sh [--check]
#
# Writes Sources/Iroh/Iroh.swift (the Swift API, module Iroh, Swift 5 language mode; on
# Linux it imports FoundationEssentials, not Foundation: see below),
# Sources/CIrohFFI/iroh_ffiFFI.h (the C declarations it calls) and
# Sources/CIrohFFI/module.modulemap. --check generates into a temporary directory and
# fails if the committed files differ (a reviewer's check that they are what the pinned
# library gives). Needs uniffi-bindgen 0.31.0 (python3 -m pip install uniffi-bindgen==0.31.0)
# and cargo (uniffi-bindgen runs `cargo metadata`; nothing is compiled or downloaded).
set -euo pipefail
SCRIPT_NAME=generate-iroh-bindings
. "$(dirname "$0")/lib.sh"

UNIFFI_VERSION=0.31.0
check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument '$1' (see --help)" ;;
esac

need_tools "python3 -m pip install uniffi-bindgen==$UNIFFI_VERSION" uniffi-bindgen
need_tools "install Rust's cargo (uniffi-bindgen runs cargo metadata)" cargo
have=$(uniffi-bindgen --version | awk '{print $2}')
[ "$have" = "$UNIFFI_VERSION" ] \
  || die "uniffi-bindgen is $have, the bindings are made with $UNIFFI_VERSION: python3 -m pip install uniffi-bindgen==$UNIFFI_VERSION"

# The library of this machine's architecture (both carry the same interface).
"$LIB_DIR/fetch-iroh.sh" >/dev/null
case "$(uname -m)" in aarch64|arm64) arch=arm64 ;; *) arch=amd64 ;; esac
lib=$REPO_ROOT/.iroh/$arch/lib/libiroh_ffi.so

work=$(mktemp -d)
at_exit "rm -rf '$work'"
# uniffi-bindgen asks cargo for the workspace's metadata: an empty package answers.
mkdir -p "$work/crate" "$work/out"
printf '[package]\nname = "placeholder"\nversion = "0.0.0"\nedition = "2021"\n[lib]\npath = "lib.rs"\n' \
  > "$work/crate/Cargo.toml"
: > "$work/crate/lib.rs"
# The C module is CIrohFFI (Sources/CIrohFFI), the Swift module Iroh.
cat > "$work/crate/uniffi.toml" <<'EOF'
[bindings.swift]
module_name = "Iroh"
ffi_module_name = "CIrohFFI"
ffi_module_filename = "iroh_ffiFFI"
generate_module_map = false
EOF
(cd "$work/crate" && uniffi-bindgen generate --library "$lib" --language swift --no-format \
   --metadata-no-deps --config uniffi.toml --out-dir "$work/out" >/dev/null) \
  || die "uniffi-bindgen failed"
[ -f "$work/out/Iroh.swift" ] && [ -f "$work/out/iroh_ffiFFI.h" ] \
  || die "uniffi-bindgen did not write Iroh.swift and iroh_ffiFFI.h: $(ls "$work/out")"
# The bindings import Foundation for Data, LocalizedError and NSLock. On Linux they take
# FoundationEssentials instead (Data, LocalizedError), and the lock from
# Sources/Iroh/FoundationShims.swift: full Foundation would bring ICU into the bridge
# (about 50 MB more in a static build). Two exact edits, checked.
swift_out=$work/out/Iroh.swift
[ "$(grep -c '^import Foundation$' "$swift_out")" = 1 ] \
  && [ "$(grep -o 'Foundation\.[A-Za-z]*' "$swift_out" | sort -u)" = Foundation.LocalizedError ] \
  || die "uniffi-bindgen's Swift is no longer what this script edits (one 'import Foundation', 'Foundation.' only before LocalizedError)"
sed -i -e 's/^import Foundation$/#if canImport(FoundationEssentials)\nimport FoundationEssentials\n#else\nimport Foundation\n#endif/' \
       -e 's/Foundation\.LocalizedError/LocalizedError/g' "$swift_out"
cat > "$work/out/module.modulemap" <<'EOF'
// Written by scripts/generate-iroh-bindings.sh: the C side of the iroh bindings
// (libiroh_ffi.so from PyPI iroh==1.2.0, in .iroh/<arch>/lib; see scripts/fetch-iroh.sh).
module CIrohFFI [system] {
    header "iroh_ffiFFI.h"
    link "iroh_ffi"
    export *
}
EOF

targets=("Sources/Iroh/Iroh.swift" "Sources/CIrohFFI/iroh_ffiFFI.h" "Sources/CIrohFFI/module.modulemap")
if $check; then
  differ=0
  for t in "${targets[@]}"; do
    if ! cmp -s "$work/out/$(basename "$t")" "$REPO_ROOT/$t"; then
      echo "generate-iroh-bindings: $t differs from what the pinned library gives" >&2; differ=1
    fi
  done
  [ $differ -eq 0 ] || exit 1
  echo "generate-iroh-bindings: ${targets[*]} match iroh 1.2.0 and uniffi-bindgen $UNIFFI_VERSION"
  exit 0
fi
for t in "${targets[@]}"; do
  mkdir -p "$REPO_ROOT/$(dirname "$t")"
  cp "$work/out/$(basename "$t")" "$REPO_ROOT/$t"
done
echo "generate-iroh-bindings: wrote ${targets[*]}"
