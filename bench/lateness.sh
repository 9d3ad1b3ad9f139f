#!/usr/bin/env bash
# Measurement: how late real-clock waits come out on this machine, as it is
# loaded now. Runs the real-clock rows (the reqwest client's policy matrix,
# and the seed matrix over HTTP) with a zero tolerance, so every wait,
# `at=` and `elapsed` is reported with its miss, and prints the distribution
# of observed minus expected (positive: late). The evidence for the default
# `tolerance.late` (docs/over-the-wire.md, "Real time and tolerances").
#
#   bash bench/lateness.sh        # 5 rounds
#   bash bench/lateness.sh 20     # 20 rounds
#
# Run it while the machine does what CI does (builds, other tests): on an
# idle machine it only shows the client's own processing time.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
out=target/lateness
rm -rf "$out"
mkdir -p "$out"
cargo build --quiet --bin faultmatrix --example reqwest-client
export FAULTMATRIX_REQWEST_CLIENT=$PWD/target/debug/examples/reqwest-client
# Zero tolerance on both sides: every real time is judged, so each one is
# printed with its miss ("observed …: 12ms too late"). Inserted under
# `title:` as the file's `defaults`.
zero=${LATENESS_TOLERANCE:-"{ abs: 0ms, rel: 0%, late: 0ms }"}
for src in runner-tests/wire/reqwest/policy.yaml matrices/seed-fallback.yaml; do
  dst=$out/$(basename "$src")
  awk -v tol="$zero" '{ print } /^title:/ { print "defaults: { tolerance: " tol " }" }' "$src" > "$dst"
  if grep -q '^defaults:' "$src"; then
    echo "error: $src has its own defaults; merge by hand" >&2
    exit 1
  fi
done
cp matrices/codes.yaml "$out/"
for i in $(seq "$rounds"); do
  echo "round $i: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  ./target/debug/faultmatrix run --color never "$out/policy.yaml" > "$out/round-$i-reqwest.txt" 2>&1 || true
  ./target/debug/faultmatrix run --color never --over-http "$out/seed-fallback.yaml" > "$out/round-$i-seed.txt" 2>&1 || true
done
# "...: 12ms too late" / "...: 3ms too short" / (before `late:`) "too long".
cat "$out"/round-*.txt |
  sed -nE 's/.*: ([0-9]+)(ns|us|ms|s) too (late|long|short)$/\1 \2 \3/p' |
  awk '{ v = $1; if ($2 == "s") v *= 1000; else if ($2 == "us") v /= 1000; else if ($2 == "ns") v /= 1e6;
         if ($3 == "short") v = -v; print v }' |
  sort -n > "$out/misses.txt"
n=$(wc -l < "$out/misses.txt")
if [ "$n" -eq 0 ]; then
  echo "error: no real time was reported; see $out/round-1-*.txt" >&2
  exit 1
fi
pick() { sed -n "$(( ($1 * n + 99) / 100 ))p" "$out/misses.txt"; }
echo "real times judged: $n over $rounds rounds (observed - expected, ms; + is late)"
echo "min $(head -1 "$out/misses.txt")  median $(pick 50)  p90 $(pick 90)  p99 $(pick 99)  max $(tail -1 "$out/misses.txt")"
echo "over 50ms late: $(awk '$1 > 50' "$out/misses.txt" | wc -l)  over 200ms: $(awk '$1 > 200' "$out/misses.txt" | wc -l)  over 500ms: $(awk '$1 > 500' "$out/misses.txt" | wc -l)"
