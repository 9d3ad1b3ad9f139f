#!/usr/bin/env bash
# Archives, partitions and row states (issue 13):
#
# 1. The test binaries are archived, the checkout is copied elsewhere and
#    the archive runs on the copy with --workspace-remap while the original
#    checkout is HIDDEN (an empty tmpfs mounted over it in a private mount
#    namespace): a test that found anything through a path baked in at
#    compile time (CARGO_MANIFEST_DIR, CARGO_BIN_EXE_*) finds nothing. The
#    verdicts must equal those of the same archive on the original checkout.
# 2. --partition hash:k/2 and count:k/2 must run every matrix row once.
# 3. Each state a row can be in (runs; `ignore:`; a requirement not met)
#    reads the same under `cargo test` and `cargo nextest run`, with CI
#    unset and with CI=true (runner-tests/states.rs).
#
#   bash .ci/nextest-archive.sh
#
# The archive is made from this checkout's build (what `cargo test` built),
# so nothing is compiled again. Where no mount namespace can be made (not
# root and no unprivileged user namespaces), the original cannot be hidden,
# and the archive is built in a copy that is then moved instead (the old
# way: it compiles the workspace's crates once more).
#
# Needs cargo-nextest; logs and verdict lists in target/nextest-archive/.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd -P)
command -v cargo-nextest >/dev/null || { echo "error: cargo-nextest is not installed (cargo install cargo-nextest --locked)" >&2; exit 1; }

work="$repo/target/nextest-archive"
rm -rf "$work/built" "$work/moved" "$work/x"
mkdir -p "$work"
# The moved tree, the archive and its extraction live outside the
# checkout, which is hidden while they run.
outside=$(mktemp -d "${TMPDIR:-/tmp}/faultmatrix-archive.XXXXXX")
trap 'rm -rf "$outside"' EXIT
archive="$outside/tests.tar.zst"
moved="$outside/moved"

# hide CMD...: runs CMD with $repo an empty directory, from $moved.
hide() {
  local script='mount -t tmpfs -o size=1m,mode=0755 faultmatrix-hidden "$1" || exit 97
    if [ -e "$1/Cargo.toml" ]; then echo "error: $1 is still visible" >&2; exit 97; fi
    cd "$2" && shift 2 && exec "$@"'
  if [ "$(id -u)" = 0 ]; then
    unshare --mount --propagation private sh -c "$script" hide "$repo" "$moved" "$@"
  else
    unshare --mount --map-root-user --propagation private sh -c "$script" hide "$repo" "$moved" "$@"
  fi
}

copy_tree() { # DEST: the checkout's tracked files, and its SDK environments
  mkdir -p "$1"
  git ls-files -z | xargs -0 cp --parents -t "$1"
  local d
  for d in .venv .venv-shims shims/node/sdk/node_modules; do
    [ -e "$d" ] && ln -s "$(readlink -f "$d")" "$1/$d"
  done
  return 0
}

mkdir "$moved"
if hide true 2>/dev/null; then
  mode=hidden
  echo "== [${SECONDS}s] cargo nextest archive (this checkout's build)"
  cargo build --quiet --example reqwest-client
  cp target/debug/examples/reqwest-client "$outside/reqwest-client"
  timeout 900 cargo nextest archive --archive-file "$archive"
  echo "== [${SECONDS}s] copy the checkout to $moved (tracked files only); the original is hidden while it runs"
  copy_tree "$moved"
else
  mode=rebuilt
  echo "== [${SECONDS}s] no mount namespace here: the original cannot be hidden, so the archive is built in a copy that is then moved"
  copy_tree "$work/built"
  (cd "$work/built" && CARGO_TARGET_DIR="$repo/target" cargo build --quiet --example reqwest-client && \
    cp "$repo/target/debug/examples/reqwest-client" "$outside/reqwest-client" && \
    CARGO_TARGET_DIR="$repo/target" timeout 900 cargo nextest archive --archive-file "$archive")
  rmdir "$moved" && mv "$work/built" "$moved"
fi
export FAULTMATRIX_REQWEST_CLIENT="$outside/reqwest-client"

# run NAME TREE [nextest args]: runs the archive on TREE (the moved one
# with the original hidden), leaves NAME.tsv (test<TAB>verdict, sorted)
# and NAME.log in $work.
run() {
  local name=$1 tree=$2
  shift 2
  rm -rf "$outside/x"
  mkdir "$outside/x"
  local rc=0 junit="$tree/target/nextest/ci/junit.xml"
  rm -f "$junit"
  local cmd=(timeout 1200 cargo nextest run --archive-file "$archive"
    --workspace-remap "$tree" --extract-to "$outside/x" --profile ci
    --no-tests=pass "$@")
  if [ "$tree" = "$moved" ] && [ "$mode" = hidden ]; then
    hide "${cmd[@]}" >"$work/$name.log" 2>&1 || rc=$?
  else
    "${cmd[@]}" >"$work/$name.log" 2>&1 || rc=$?
  fi
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

echo "== [${SECONDS}s] the archive on the original checkout, then on the moved one ($mode)"
# Every test but the SDK rows of the wire harness: those take a minute of
# interpreter time per run and find their paths exactly as the wire
# harness's other trials do (runner-tests/paths.rs), which stay in.
scope='not (binary(wire) & (test(~python) | test(~node)))'
run original "$repo" -E "$scope"
run moved "$moved" -E "$scope"
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

echo "== [${SECONDS}s] partitions cover every matrix row once"
rows="binary(matrices) | binary(custom_system)"
grep -E '^faultmatrix::(matrices|custom_system)::' "$work/moved.tsv" >"$work/all.tsv"
for scheme in hash count; do
  : >"$work/$scheme.tsv"
  for k in 1 2; do
    run "$scheme-$k" "$moved" -E "$rows" --partition "$scheme:$k/2"
    cat "$work/$scheme-$k.tsv" >>"$work/$scheme.tsv"
  done
  sort -o "$work/$scheme.tsv" "$work/$scheme.tsv"
  if ! diff -u "$work/all.tsv" "$work/$scheme.tsv"; then
    echo "error: --partition $scheme:k/2 does not run every row exactly once" >&2
    exit 1
  fi
  echo "   $scheme:1/2 + $scheme:2/2 = $(wc -l <"$work/$scheme.tsv") = all"
done

echo "== [${SECONDS}s] each row state reads the same under cargo test and cargo nextest run (runner-tests/states.rs)"
install='install it with: pip install faultmatrix-states-fixture'
for ci in unset true; do
  if [ "$ci" = unset ]; then envs=(env -u CI FAULTMATRIX_STATES=1); else envs=(env CI=true FAULTMATRIX_STATES=1); fi
  # cargo test: libtest's `test NAME ... ok|ignored|FAILED` lines.
  "${envs[@]}" cargo test --test states >"$work/states-cargo-$ci.log" 2>&1 || true
  sed -nE 's/^test (.*[^ ]) +\.\.\. (ok|ignored|FAILED)(,.*)?$/\1\t\2/p' "$work/states-cargo-$ci.log" |
    sed 's/\tok$/\tpassed/; s/\tignored$/\tskipped/; s/\tFAILED$/\tfailed/' | sort >"$work/states-cargo-$ci.tsv"
  # cargo nextest run: its status lines (its JUnit report leaves skipped
  # tests out).
  "${envs[@]}" cargo nextest run --test states --status-level all \
    --final-status-level none >"$work/states-nextest-$ci.log" 2>&1 || true
  sed -nE 's/^ *(PASS|SKIP|FAIL) .* faultmatrix::states (.*)$/\2\t\1/p' "$work/states-nextest-$ci.log" |
    sed 's/\tPASS$/\tpassed/; s/\tSKIP$/\tskipped/; s/\tFAIL$/\tfailed/' | sort -u >"$work/states-nextest-$ci.names.tsv"
  want="runner-tests/states/needs/needs.yaml::needs a missing package	$([ "$ci" = true ] && echo failed || echo skipped)
runner-tests/states/runs.yaml::ignored by the row	skipped
runner-tests/states/runs.yaml::runs	passed"
  for runner in cargo nextest; do
    got="$work/states-$runner-$ci.tsv"
    if [ "$runner" = nextest ]; then got="$work/states-nextest-$ci.names.tsv"; fi
    if ! diff -u <(printf '%s\n' "$want") "$got"; then
      echo "error: with CI $ci, $runner reads the rows' states otherwise than expected" >&2
      exit 1
    fi
    if [ "$ci" = true ] && ! grep -q "$install" "$work/states-$runner-$ci.log"; then
      echo "error: with CI=true the failing row's message under $runner does not name the install command" >&2
      exit 1
    fi
  done
  echo "   CI $ci: cargo test = cargo nextest run = expected ($(cut -f2 "$work/states-cargo-$ci.tsv" | tr '\n' ' '))"
done
echo "nextest archive ($mode), remap, partitions and row states: ok (${SECONDS}s)"
