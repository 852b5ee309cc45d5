#!/bin/sh
# Build SQLite's speedtest1 (the "speedtest1" workload of bench/run.py) from Debian's sqlite3
# source package, linked against Debian's libsqlite3 (the library the sqlite3 shell uses).
#
#     bench/build_speedtest1.sh OUT_DIR        (bench/run.py uses <build>/speedtest1)
#
# Needs a deb-src line for apt (apt-get source), gcc and libsqlite3-dev. With --install,
# bench/run.py runs this script itself.
set -eu
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$out"
if ! ls sqlite3_*.orig.tar.* >/dev/null 2>&1; then
    apt-get source --download-only sqlite3 >apt-source.log 2>&1 || {
        echo "apt-get source sqlite3 failed (no deb-src line in /etc/apt/sources.list.d?):" >&2
        tail -3 apt-source.log >&2
        exit 1
    }
fi
orig=$(ls sqlite3_*.orig.tar.* | grep -v www | head -1)
tar -xf "$orig" --wildcards '*/test/speedtest1.c'
src=$(find . -path '*/test/speedtest1.c' | head -1)
gcc -O2 -o speedtest1 "$src" -lsqlite3
echo "built $out/speedtest1 from $orig"
