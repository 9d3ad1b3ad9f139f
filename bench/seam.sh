#!/usr/bin/env bash
# Benchmark of the in-process HTTP seam (issue 11): the same three-call row
# (A: 503, 503; B: 200) run three ways by bench/peer, instructions per row
# counted with callgrind, all in one run:
#
#   bash bench/seam.sh        # 40 rows per way (plus a 10-row baseline)
#   bash bench/seam.sh 100    # 100 rows per way
#
# Per row = (instructions for 10+N rows - instructions for 10 rows) / N, so
# start-up, loading and the first connection's warm-up are not counted.
# Targets: seam within 3x of the reference system per row; the wiremock-rs
# way (two MockServers per row, same reqwest client and loop) at least
# 100x the seam per row.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-40}
base=10
cargo build --release --quiet -p faultmatrix-bench-peer
bin=target/release/faultmatrix-bench-peer
command -v valgrind > /dev/null || { echo "valgrind is needed (apt-get install valgrind)"; exit 1; }

count() { # mode rows -> instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

declare -A per
for mode in reference seam wiremock; do
  lo=$(count "$mode" "$base")
  hi=$(count "$mode" $((base + n)))
  per[$mode]=$(( (hi - lo) / n ))
  printf '%-10s %12d instructions per row  (%d rows: %d, %d rows: %d)\n' \
    "$mode" "${per[$mode]}" "$base" "$lo" $((base + n)) "$hi"
done
python3 - "${per[reference]}" "${per[seam]}" "${per[wiremock]}" <<'PY'
import sys
ref, seam, wm = map(int, sys.argv[1:])
print(f"seam / reference: {seam / ref:.1f}x  (target <= 3x)")
print(f"wiremock / seam:  {wm / seam:.1f}x  (target >= 100x)")
PY
echo "wall clock, uninstrumented, $n rows each:"
for mode in reference seam wiremock; do
  printf '%-10s ' "$mode"; "$bin" "$mode" "$n" 2>&1 | tail -1
done
