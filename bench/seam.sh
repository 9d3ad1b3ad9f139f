#!/usr/bin/env bash
# Benchmark of the in-process HTTP seam (issue 11): the same three-call row
# (A: 503, 503; B: 200) run four ways by bench/peer, all in one run:
#
#   bash bench/seam.sh            # 40 rows counted per way, 5 x 200 rows timed
#   bash bench/seam.sh 100 500    # 100 rows counted, 5 x 500 rows timed
#
# The ways: `reference` (faultmatrix's reference system in-process), `seam`
# (a reqwest client through the HTTP seam), `floor` (the same reqwest
# client and loop against two canned loopback responders, nothing of
# faultmatrix: reqwest's own floor) and `wiremock` (two MockServers per
# row, the same reqwest client and loop, zero backoff, real clock). The
# same row with a 100 ms backoff between A1 and A2 is timed too
# (`seam-wait`, `wiremock-wait`: virtual through the seam, slept for real
# the wiremock way; 10 rows a round for wiremock-wait).
#
# Instructions per row = (instructions for 10+N rows - for 10 rows) / N,
# counted by callgrind over every thread, so start-up, loading and the
# first connection's warm-up are not counted. Instructions leave out the
# kernel (socket calls, thread switches), which is most of what a real
# server costs, so the time per row is measured too: each way runs 10 rows
# unmeasured then T rows, five rounds interleaved, and the median of the
# rounds is shown, wall time and the process's CPU time (every thread,
# user and system). Targets: seam within 3x of the reference per row; the
# wiremock-rs way at least 100x the seam per row.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-40}
t=${2:-200}
rounds=5
base=10
ways=(reference seam floor wiremock)
cargo build --release --quiet -p faultmatrix-bench-peer
bin=target/release/faultmatrix-bench-peer
command -v valgrind > /dev/null || { echo "valgrind is needed (apt-get install valgrind)"; exit 1; }

count() { # way rows -> instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
declare -A ins
for way in "${ways[@]}"; do
  lo=$(count "$way" "$base")
  hi=$(count "$way" $((base + n)))
  ins[$way]=$(( (hi - lo) / n ))
  printf '%-10s %10d instructions per row  (%d rows: %d, %d rows: %d)\n' \
    "$way" "${ins[$way]}" "$base" "$lo" $((base + n)) "$hi"
done

timings=$(mktemp)
trap 'rm -f "$timings"' EXIT
for r in $(seq "$rounds"); do
  for way in "${ways[@]}" seam-wait; do
    echo "$way $("$bin" "$way" "$t" time)" >> "$timings"
  done
  echo "wiremock-wait $("$bin" wiremock-wait 10 time)" >> "$timings"
done

python3 - "$timings" "$t" "$rounds" \
  "${ins[reference]}" "${ins[seam]}" "${ins[floor]}" "${ins[wiremock]}" <<'PY'
import sys, statistics
path, t, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ins = dict(zip(["reference", "seam", "floor", "wiremock"], map(int, sys.argv[4:8])))
wall, cpu = {}, {}
for line in open(path):
    way, w, c = line.split()
    wall.setdefault(way, []).append(float(w))
    cpu.setdefault(way, []).append(float(c))
med = lambda xs: statistics.median(xs)
print(f"\ntime per row, median of {rounds} rounds of {t} rows (min-max of the rounds):")
for way in list(ins) + ["seam-wait", "wiremock-wait"]:
    print(f"{way:<10} wall {med(wall[way]):8.1f} us ({min(wall[way]):.1f}-{max(wall[way]):.1f})"
          f"   cpu {med(cpu[way]):8.1f} us ({min(cpu[way]):.1f}-{max(cpu[way]):.1f})")
def ratios(label, a, b, target):
    print(f"{label:<22} instructions {ins[a] / ins[b]:6.1f}x   cpu {med(cpu[a]) / med(cpu[b]):6.1f}x"
          f"   wall {med(wall[a]) / med(wall[b]):6.1f}x   ({target})")
print()
ratios("seam / reference", "seam", "reference", "target <= 3x")
ratios("floor / reference", "floor", "reference", "reqwest alone, nothing of faultmatrix")
ratios("seam / floor", "seam", "floor", "what the seam adds to reqwest")
ratios("wiremock / seam", "wiremock", "seam", "target >= 100x")
print(f"{'wiremock-wait / seam-wait':<22} cpu {med(cpu['wiremock-wait']) / med(cpu['seam-wait']):6.1f}x"
      f"   wall {med(wall['wiremock-wait']) / med(wall['seam-wait']):6.1f}x   (a 100 ms backoff in the row)")
PY
