#!/bin/bash
# Build memcached (Debian 12 source) with examples/memcached/oscar-slabs.patch, out of tree.
#
#   examples/memcached/build.sh WORKDIR      -> prints WORKDIR/memcached-oscar/memcached
#
# Needs: deb-src for bookworm (apt-get source memcached), libevent-dev, gcc, make,
# pkg-config, and an Oscar build tree (build/, made here if missing). Oscar's API (oscar.h,
# liboscar_api.a, oscar.pc) is installed into WORKDIR/prefix and the patched memcached is
# linked against it with pkg-config, so it runs with and without LD_PRELOAD=liboscar.so.
# Reuses WORKDIR: a second call only rebuilds when the patch or the API changed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${1:?usage: build.sh WORKDIR}
BUILD=${OSCAR_BUILD_DIR:-$REPO/build}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
log() { echo "build.sh: $*" >&2; }

if [ ! -e "$BUILD/src/liboscar.so" ] || [ ! -e "$BUILD/shim/liboscar_api.a" ]; then
    log "building Oscar in $BUILD"
    cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
    cmake --build "$BUILD" -j2 >&2
fi
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null

# Debian's source package (1.6.18 with the Debian patches applied).
if [ ! -d "$WORK/src" ] || ! ls -d "$WORK"/src/memcached-*/ >/dev/null 2>&1; then
    rm -rf "$WORK/src" && mkdir -p "$WORK/src"
    log "fetching the Debian source of memcached (apt-get source)"
    (cd "$WORK/src" && apt-get source memcached >&2) || {
        log "apt-get source memcached failed: add 'deb-src http://deb.debian.org/debian bookworm main' to /etc/apt/sources.list.d/ and run apt-get update"
        rm -rf "$WORK/src"; exit 2; }
fi
SRC=$(ls -d "$WORK"/src/memcached-*/ | head -1)

OUT="$WORK/memcached-oscar"
STAMP=$( (cat "$HERE/oscar-slabs.patch" "$WORK/prefix/include/oscar.h" "$WORK/prefix/lib/liboscar_api.a"; echo "$SRC") | sha256sum | cut -c1-16)
if [ -x "$OUT/memcached" ] && [ "$(cat "$OUT/.oscar-stamp" 2>/dev/null)" = "$STAMP" ]; then
    echo "$OUT/memcached"; exit 0
fi
rm -rf "$OUT" && cp -a "$SRC" "$OUT"
log "patching and building memcached in $OUT"
(cd "$OUT" && patch -p1 --quiet < "$HERE/oscar-slabs.patch")
export PKG_CONFIG_PATH="$WORK/prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
CFLAGS_DEB=$(dpkg-buildflags --get CFLAGS 2>/dev/null || echo "-g -O2")
(cd "$OUT" && ./configure --quiet CFLAGS="$CFLAGS_DEB" CPPFLAGS="$(pkg-config --cflags oscar)" \
        LIBS="$(pkg-config --libs oscar)" >&2 && make -j2 memcached >"$OUT/make.log" 2>&1) || {
    log "memcached build failed (see $OUT/make.log; needs libevent-dev)"; tail -20 "$OUT/make.log" >&2 || true; exit 1; }
echo "$STAMP" > "$OUT/.oscar-stamp"
echo "$OUT/memcached"
