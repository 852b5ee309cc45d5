#!/bin/bash
# memcached's slab allocator under Oscar: the paper's case (issue 8, item 6).
#
#   examples/memcached/run.sh            # ~5 minutes: build, 4 configurations x 3 runs x 20 s
#
# Builds Debian 12's memcached with oscar-slabs.patch out of tree (build.sh, in $WORK,
# default /tmp/oscar-memcached), then runs memcaslap (libmemcached-tools) against
#   a  stock   /usr/bin/memcached, glibc malloc
#   b  stock   /usr/bin/memcached, LD_PRELOAD=liboscar.so (items unprotected inside slabs)
#   c  patched memcached,         LD_PRELOAD=liboscar.so (every item a view, revoked on free)
#   d  patched memcached,         no Oscar (pass-through shim; should match a)
# interleaved (a b c d, a b c d, ...), and prints the median throughput of each. After every
# load run, mcclient.py sets/gets/deletes/overwrites 3,000 keys on the same server and
# compares the values, and the server's output is checked for `oscar:` lines (any fails the
# run, including Oscar's warning that the kernel mapping limit is near).
#
# Item count vs the kernel mapping limit: under Oscar every live item of the patched server is
# a view, i.e. one kernel mapping, and vm.max_map_count (65530 by default) allows about 60,000.
# memcaslap keeps setting new keys (~5,000/s here), so a 1 GB cache would pass the limit after
# ~12 s; the patch would then hand items out unprotected (counted in `stats slabs`,
# oscar_unprotected_items). The benchmark instead bounds the cache: memcached -m 24 holds
# ~34,000 of these items (~37,000 mappings) and evicts the rest (LRU), so every item stays
# protected and 10% of operations allocate and free (create and revoke a view).
#
# Environment: DURATION (s, 20), RUNS (3), CONC (memcaslap concurrency, 32), WIN (memcaslap
# window, 1k), MEM (memcached -m, MB, 24), THREADS (memcached -t, 2), WORK, OSCAR_BUILD_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/oscar-memcached}
BUILD=${OSCAR_BUILD_DIR:-$REPO/build}
DURATION=${DURATION:-20}
RUNS=${RUNS:-3}
CONC=${CONC:-32}
WIN=${WIN:-1k}
THREADS=${THREADS:-2}
MEM=${MEM:-24}
STOCK=${STOCK_MEMCACHED:-/usr/bin/memcached}

for tool in memcaslap python3; do
    command -v $tool >/dev/null || { echo "run.sh: $tool missing (apt-get install libmemcached-tools python3)" >&2; exit 2; }
done
[ -x "$STOCK" ] || { echo "run.sh: $STOCK missing (apt-get install memcached)" >&2; exit 2; }

PATCHED=$(OSCAR_BUILD_DIR="$BUILD" "$HERE/build.sh" "$WORK" | tail -1)
LIBOSCAR="$BUILD/src/liboscar.so"
[ -x "$PATCHED" ] && [ -e "$LIBOSCAR" ] || { echo "run.sh: build failed" >&2; exit 1; }

OUT="$WORK/results"
mkdir -p "$OUT"
CFG="$OUT/memcaslap.cfg"
# key 16-64 bytes, value 64-1024 bytes, 90% get / 10% set
printf 'key\n16 64 1\nvalue\n64 1024 1\ncmd\n0 0.1\n1 0.9\n' > "$CFG"
USER_OPT=(); [ "$(id -u)" = 0 ] && USER_OPT=(-u root)

SERVER_PID=
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=
    fi
}
trap stop_server EXIT

port_open() { python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),timeout=1)" 2>/dev/null; }

# run_one NAME BINARY PRELOAD PORT LOG -> prints TPS; correctness into $OUT/NAME.check
run_one() {
    local name=$1 bin=$2 preload=$3 port=$4 log=$5
    if [ -n "$preload" ]; then
        env LD_PRELOAD="$preload" "$bin" "${USER_OPT[@]}" -p "$port" -U 0 -l 127.0.0.1 -m "$MEM" -t "$THREADS" >"$log" 2>&1 &
    else
        "$bin" "${USER_OPT[@]}" -p "$port" -U 0 -l 127.0.0.1 -m "$MEM" -t "$THREADS" >"$log" 2>&1 &
    fi
    SERVER_PID=$!
    for _ in $(seq 100); do port_open "$port" && break; sleep 0.1; done
    local tps
    tps=$(memcaslap -s "127.0.0.1:$port" -T 1 -c "$CONC" -w "$WIN" -t "${DURATION}s" -F "$CFG" 2>&1 \
          | tee -a "$OUT/$name.memcaslap" | sed -n 's/.*TPS: \([0-9]*\).*/\1/p' | tail -1)
    local maps
    maps=$(wc -l < "/proc/$SERVER_PID/maps")
    local check
    check=$(python3 "$HERE/mcclient.py" "$port" 3000 --prefix chk --small 2>&1 | tail -1) || check="FAILED: $check"
    stop_server
    if grep -q '^oscar:' "$log"; then check="$check; OSCAR REPORT in $log"; fi
    echo "$check (mappings after load: $maps)" >> "$OUT/$name.check"
    echo "${tps:-0}"
}

NAMES=(a b c d)
declare -A DESC=([a]="stock memcached, glibc" [b]="stock memcached, Oscar" \
                 [c]="patched memcached, Oscar (items are views)" [d]="patched memcached, no Oscar (pass-through)")
declare -A BIN=([a]="$STOCK" [b]="$STOCK" [c]="$PATCHED" [d]="$PATCHED")
declare -A PRE=([a]="" [b]="$LIBOSCAR" [c]="$LIBOSCAR" [d]="")
declare -A TPS
for n in "${NAMES[@]}"; do rm -f "$OUT/$n.check" "$OUT/$n.memcaslap"; TPS[$n]=""; done

echo "memcached $("$STOCK" -V | awk '{print $2}'), memcaslap: $CONC connections, ${WIN} keys each, 90% get / 10% set, ${DURATION} s, memcached -t $THREADS -m $MEM"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), kernel $(uname -r), vm.max_map_count $(cat /proc/sys/vm/max_map_count), load $(cut -d' ' -f1-3 /proc/loadavg)"
port=$((22200 + RANDOM % 2000))
for r in $(seq "$RUNS"); do
    for n in "${NAMES[@]}"; do
        port=$((port + 1))
        t=$(run_one "$n" "${BIN[$n]}" "${PRE[$n]}" "$port" "$OUT/$n.run$r.log")
        TPS[$n]="${TPS[$n]} $t"
        echo "run $r $n: $t ops/s   $(tail -1 "$OUT/$n.check")"
    done
done

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
base=$(median ${TPS[a]})
echo
printf '| %-46s | %-26s | %10s | %8s |\n' configuration "ops/s (runs)" median "vs a"
printf '| %-46s | %-26s | %10s | %8s |\n' --- --- --- ---
fail=0
for n in "${NAMES[@]}"; do
    m=$(median ${TPS[$n]})
    printf '| %-46s | %-26s | %10s | %7.1f%% |\n' "$n: ${DESC[$n]}" "$(echo ${TPS[$n]} | tr ' ' '/')" "$m" \
        "$(python3 -c "print(100.0*$m/$base if $base else 0)")"
    grep -v '^ok ' "$OUT/$n.check" >/dev/null && fail=1
    grep 'OSCAR' "$OUT/$n.check" >/dev/null && fail=1
done
echo
echo "correctness after each load run (mcclient.py --small: 3,000 keys set, 600 deleted, 1,000 overwritten, all compared):"
for n in "${NAMES[@]}"; do
    echo "  $n: $(grep -c '^ok ' "$OUT/$n.check")/$(wc -l < "$OUT/$n.check") runs ok; last: $(tail -1 "$OUT/$n.check")"
done
[ "$fail" = 0 ] && echo "all checks passed" || echo "SOME CHECKS FAILED (see $OUT/*.check)"
echo "logs: $OUT"
exit $fail
