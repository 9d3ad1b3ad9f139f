#!/bin/sh
# Loader bounds (issue 16): instruction counts (callgrind) of `faultmatrix
# check` on files with N unknown routes and on deep flow nesting, so a
# quadratic path shows as a ratio, not as a timing.
#   bench/bounds.sh [BINARY]   (default: target/debug/faultmatrix)
# Prints: case, N, instructions, ratio to the previous N of the same case.
set -eu
BIN=${1:-target/debug/faultmatrix}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
count() { # file -> instructions
    valgrind --tool=callgrind --callgrind-out-file="$DIR/cg.out" "$BIN" check "$1" >/dev/null 2>&1 || true
    callgrind_annotate "$DIR/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }'
}
prev=
for n in 1000 4000; do
    f="$DIR/routes-$n.yaml"
    { printf 'title: t\npolicy:\n  routes: [{ name: A, attempts: 2 }]\nrows:\n  - name: a\n    inject:\n'
      i=0; while [ $i -lt $n ]; do printf '      R%d: [200]\n' $i; i=$((i+1)); done
      printf '    expect: { stop: success }\n'; } > "$f"
    ir=$(count "$f")
    if [ -n "$prev" ]; then echo "unknown-routes $n $ir $(echo "scale=2; $ir / $prev" | bc)"; else echo "unknown-routes $n $ir"; fi
    prev=$ir
done
prev=
for n in 4000 16000; do
    f="$DIR/deep-$n.yaml"
    { printf 'title: t\nrows:\n  - name: a\n    inject: { A: '
      i=0; while [ $i -lt $n ]; do printf '['; i=$((i+1)); done
      i=0; while [ $i -lt $n ]; do printf ']'; i=$((i+1)); done
      printf ' }\n'; } > "$f"
    ir=$(count "$f")
    if [ -n "$prev" ]; then echo "flow-nesting $n $ir $(echo "scale=2; $ir / $prev" | bc)"; else echo "flow-nesting $n $ir"; fi
    prev=$ir
done
