#!/usr/bin/env bash
# Archives and partitions (issue 13): the test binaries are built in one
# checkout, that checkout is moved away, and the archive runs on the moved
# tree with --workspace-remap: every test must find its matrices, fixtures
# and the faultmatrix binary at run time, and give the same verdicts as
# the same archive run on the original checkout. Then --partition
# hash:k/2 and count:k/2 must run every matrix row exactly once.
#
#   bash .ci/nextest-archive.sh
#
# (Work files in target/nextest-archive/; the first run builds the test
# binaries once more for the copy, later runs reuse that build.)
#
# Needs cargo-nextest; uses this checkout's target/ as the build cache.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
command -v cargo-nextest >/dev/null || { echo "error: cargo-nextest is not installed (cargo install cargo-nextest --locked)" >&2; exit 1; }

# A fixed place under target/ (ignored by git): the copy is built at the
# same path each time, so cargo reuses its previous build.
work="$repo/target/nextest-archive"
rm -rf "$work/built" "$work/moved" "$work/x"
mkdir -p "$work"
export CARGO_TARGET_DIR="$repo/target"

echo "== copy the checkout to $work/built (tracked files only)"
mkdir "$work/built"
git ls-files -z | xargs -0 cp --parents -t "$work/built"
[ -d .venv ] && ln -s "$repo/.venv" "$work/built/.venv"
[ -d .venv-shims ] && ln -s "$repo/.venv-shims" "$work/built/.venv-shims"
[ -d shims/node/sdk/node_modules ] && ln -s "$repo/shims/node/sdk/node_modules" "$work/built/shims/node/sdk/node_modules"

echo "== cargo nextest archive (built in $work/built)"
(cd "$work/built" && cargo build --quiet --example reqwest-client && \
  cp "$CARGO_TARGET_DIR/debug/examples/reqwest-client" "$work/reqwest-client" && \
  timeout 900 cargo nextest archive --archive-file "$work/tests.tar.zst")

echo "== move the checkout: $work/built -> $work/moved"
mv "$work/built" "$work/moved"
unset CARGO_TARGET_DIR
export FAULTMATRIX_REQWEST_CLIENT="$work/reqwest-client"

# run NAME TREE [nextest args]: runs the archive on TREE, leaves NAME.tsv
# (test<TAB>verdict, sorted) in $work.
run() {
  local name=$1 tree=$2
  shift 2
  rm -rf "$work/x"
  mkdir "$work/x"
  local rc=0 junit="$tree/target/nextest/ci/junit.xml"
  rm -f "$junit"
  timeout 600 cargo nextest run --archive-file "$work/tests.tar.zst" \
    --workspace-remap "$tree" --extract-to "$work/x" --profile ci \
    --no-tests=pass "$@" >"$work/$name.log" 2>&1 || rc=$?
  if [ ! -f "$junit" ]; then
    echo "error: the $name run wrote no JUnit report (exit $rc):" >&2
    tail -30 "$work/$name.log" >&2
    exit 1
  fi
  python3 - "$junit" >"$work/$name.tsv" <<'PY'
import sys, xml.etree.ElementTree as ET
rows = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    tags = {c.tag for c in case}
    verdict = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
    rows.append(f"{case.get('classname')}::{case.get('name')}\t{verdict}")
print("\n".join(sorted(rows)))
PY
  echo "   $name: $(wc -l <"$work/$name.tsv") tests, exit $rc"
  return 0
}

echo "== the archive on the original checkout, then on the moved one"
# Every test but the SDK rows of the wire harness: those take a minute of
# interpreter time per run and find their paths exactly as the wire
# harness's other trials do (runner-tests/paths.rs), which stay in.
scope='not (binary(wire) & (test(~python) | test(~node)))'
run original "$repo" -E "$scope"
run moved "$work/moved" -E "$scope"
if ! diff -u "$work/original.tsv" "$work/moved.tsv"; then
  echo "error: verdicts differ between the original and the moved checkout" >&2
  tail -40 "$work/moved.log" >&2
  exit 1
fi
if grep -q $'\tfailed$' "$work/moved.tsv"; then
  echo "error: tests fail on the moved checkout:" >&2
  grep $'\tfailed$' "$work/moved.tsv" >&2
  tail -60 "$work/moved.log" >&2
  exit 1
fi
echo "   same verdicts: $(cut -f2 "$work/moved.tsv" | sort | uniq -c | tr -s ' ' | tr '\n' ',')"

echo "== partitions cover every matrix row once"
rows="binary(matrices) | binary(custom_system)"
grep -E '^faultmatrix::(matrices|custom_system)::' "$work/moved.tsv" >"$work/all.tsv"
for scheme in hash count; do
  : >"$work/$scheme.tsv"
  for k in 1 2; do
    run "$scheme-$k" "$work/moved" -E "$rows" --partition "$scheme:$k/2"
    cat "$work/$scheme-$k.tsv" >>"$work/$scheme.tsv"
  done
  sort -o "$work/$scheme.tsv" "$work/$scheme.tsv"
  if ! diff -u "$work/all.tsv" "$work/$scheme.tsv"; then
    echo "error: --partition $scheme:k/2 does not run every row exactly once" >&2
    exit 1
  fi
  echo "   $scheme:1/2 + $scheme:2/2 = $(wc -l <"$work/$scheme.tsv") = all"
done
echo "nextest archive, remap and partitions: ok"
