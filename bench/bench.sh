#!/usr/bin/env bash
# Benchmark: generate N-row matrix trees and run them end to end with the
# release CLI (load, run, compare, report), then time the cargo harness.
#
#   bash bench/bench.sh            # 10,000 and 100,000 rows
#   bash bench/bench.sh 1000 100   # one tree: FILES ROWS
#
# Prints wall time, rows per second and peak memory (GNU time's max RSS).
# Targets (DESIGN.md): 100k rows < 2 s, 10k rows < 0.3 s, < 200 MB;
# harness overhead per row within 2x of the CLI; --exact one row < 50 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/bench
cargo build --release --quiet --bin faultmatrix --example gen_matrices
cargo test --release --quiet --test matrices --no-run 2>/dev/null
# The newest harness binary, without `ls | head`: under pipefail, head
# closing the pipe early kills ls with SIGPIPE (exit 141).
harness=""
for f in target/release/deps/matrices-*; do
  [[ $f == *.d ]] && continue
  [[ -z $harness || $f -nt $harness ]] && harness=$f
done
[ -n "$harness" ] || { echo "error: no target/release/deps/matrices-* harness binary" >&2; exit 1; }

measure() { # label, command...
  local label=$1; shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$out/time.txt" "$@" > "$out/stdout.txt" 2>&1 || true
    read -r secs kb < "$out/time.txt"
  else
    local t0=$(date +%s.%N); "$@" > "$out/stdout.txt" 2>&1 || true
    secs=$(echo "$(date +%s.%N) - $t0" | bc); kb=0
  fi
  echo "$label: ${secs}s wall, peak $((kb / 1024)) MB"
}

bench_tree() { # files rows
  local files=$1 rows=$2 n=$(( $1 * $2 ))
  local dir="$out/tree-${files}x${rows}"
  [ -d "$dir" ] || target/release/examples/gen_matrices "$dir" "$files" "$rows" > /dev/null
  echo "== $n rows ($files files x $rows rows)"
  measure "cli run" target/release/faultmatrix run --quiet "$dir"
  tail -1 "$out/stdout.txt"
  echo "cli rows/s: $(python3 -c "print(int($n / max($secs, 1e-9)))" 2>/dev/null || echo "?")"
  local cli_secs=$secs
  measure "cargo harness (all rows)" env FAULTMATRIX_MATRICES="$dir" "$harness" --quiet
  grep -E "test result" "$out/stdout.txt" || true
  echo "harness/cli time ratio: $(python3 -c "print(round($secs / max($cli_secs, 1e-9), 2))" 2>/dev/null || echo "?")"
  local files=("$dir"/*) first
  first=$(basename "${files[0]}")
  measure "cargo harness --exact one row" env FAULTMATRIX_MATRICES="$dir" "$harness" --exact "$dir/$first::row 0"
  grep -E "test result" "$out/stdout.txt" || true
}

mkdir -p "$out"
if [ $# -ge 2 ]; then
  bench_tree "$1" "$2"
else
  bench_tree 100 100
  bench_tree 1000 100
fi
