#!/usr/bin/env bash
# The explore-mode benchmark of issue 17 (figures in docs/explore.md).
#
#   bash bench/explore.sh           # instructions per case and per phase, then cases/s
#   bash bench/explore.sh count     # instructions only (callgrind, one thread)
#   bash bench/explore.sh rate      # cases/s on 1 and 2 threads, with the load average
#   CASES=20000 bash bench/explore.sh count
#   CLI=/tmp/faultmatrix bash bench/explore.sh   # measure that binary, no build
#
# Instruction counts come from valgrind --tool=callgrind on the release
# CLI, so they hold on a loaded machine: the cost of N cases minus the cost
# of one case (start-up, loading the file), over N - 1. Phases are the
# inclusive counts of the functions that generate a case, build its row,
# run it and check it. Cases per second are real time and vary with the
# machine's load, which is printed beside them; 1e9 / instructions per case
# is a sanity check of what one core can do.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/explore-bench
mkdir -p "$out"
cli=${CLI:-target/release/faultmatrix}
file=matrices/explore/reference.yaml
cases=${CASES:-5000}
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(count rate)

[ -n "${CLI:-}" ] || cargo build --release --quiet --bin faultmatrix

ir() { # outfile args...
  local f=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$f" "$cli" explore "$file" --threads 1 "$@" > /dev/null 2>&1 || true
  awk '/^(summary|totals):/ {print $2; exit}' "$f"
}

incl() { # outfile pattern: inclusive instructions of a function (the largest
  # figure of a line naming it: callgrind splits a function's own lines by
  # the file its inlined code came from, the caller's "=> f (Nx)" line has
  # it whole)
  callgrind_annotate --inclusive=yes --tree=caller --threshold=100 "$1" 2>/dev/null \
    | awk -v pat="$2" 'index($0, pat) {gsub(",", "", $1); if ($1 + 0 > max) max = $1 + 0} END {print max + 0}'
}

count() {
  echo "== instructions per case (release CLI, callgrind, one thread, $file)"
  local one many
  one=$(ir "$out/cg-1.out" --cases 1)
  many=$(ir "$out/cg-n.out" --cases "$cases")
  python3 - "$one" "$many" "$cases" <<'PY'
import sys
one, many, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
per = (many - one) / (n - 1)
print(f"total: {per:,.0f} instructions/case ({n:,} cases minus 1 case, over {n - 1:,}); 1e9 / that = {1e9 / per:,.0f} cases/s per core")
PY
  for phase in "explore::generate::case " "explore::case::Case::to_row " \
      "exec::run::run_row_with " "explore::check::check_all "; do
    local n
    n=$(incl "$out/cg-n.out" "$phase")
    python3 -c 'import sys; print(f"  {sys.argv[1].strip():<34} {int(sys.argv[2]) / int(sys.argv[3]):>9,.0f} per case")' \
      "$phase" "${n:-0}" "$cases"
  done
}

rate() {
  echo "== cases per second (real time; load average beside it)"
  for t in 1 2; do
    echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
    "$cli" explore "$file" --cases 200000 --threads "$t" | tail -1
  done
}

for p in "${parts[@]}"; do "$p"; done
