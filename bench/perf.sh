#!/usr/bin/env bash
# The performance benchmark of issue 15 (figures in docs/running.md).
#
#   bash bench/perf.sh              # every part below, in order
#   bash bench/perf.sh count        # instructions per row and per phase (callgrind), cold and with the model cache
#   bash bench/perf.sh frontends    # the in-process alternatives, counted (callgrind)
#   bash bench/perf.sh memory       # CLI wall and peak memory: 10k, 100k, 1M rows, one 100k-row file
#   bash bench/perf.sh harness      # the cargo harness's wall and peak memory: 10k, 100k, 1M rows
#   bash bench/perf.sh wire         # over the wire, per row (10 and 100 rows of files of 100 / 500 / 2000 rows)
#   bash bench/perf.sh nextest      # cargo nextest, per test, debug profile
#   bash bench/perf.sh peer         # the wiremock-rs way (bench/peer, via bench/seam.sh)
#   bash bench/perf.sh build        # clean build of a consumer crate that only runs matrices
#
# Instruction counts come from valgrind --tool=callgrind, so they hold on a
# loaded machine; every ratio is taken between figures of the same run.
# Wall times (memory, wire, nextest) are for orientation only.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/perf
mkdir -p "$out"
# FAULTMATRIX_BENCH_CLI: another build of the CLI to measure (a "before").
cli=${FAULTMATRIX_BENCH_CLI:-target/release/faultmatrix}
gen=target/release/examples/gen_matrices
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(count frontends memory harness wire nextest peer build)

need_release() {
  cargo build --release --quiet --bin faultmatrix --example gen_matrices --example frontends
}

tree() { # files rows -> prints the directory (generated once)
  local dir="$out/tree-$1x$2"
  [ -d "$dir" ] || "$gen" "$dir" "$1" "$2" > /dev/null
  echo "$dir"
}

# Total instructions (Ir) of a callgrind run of a command.
ir() { # outfile command...
  local f=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$f" "$@" > /dev/null 2>&1 || true
  awk '/^(summary|totals):/ {print $2; exit}' "$f"
}

# Inclusive instructions of the first function whose name contains $2.
incl() { # outfile pattern
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null \
    | awk -v pat="$2" '!found && index($0, pat) {gsub(",", "", $1); print $1; found = 1}'
}

per() { # total rows -> per row, integer
  python3 -c "print(round(${1:-0} / $2))"
}

count() {
  echo "== instructions per in-process row (release CLI, callgrind, one thread)"
  local small big
  small=$(tree 2 100)
  big=$(tree 12 100)
  local a b
  a=$(ir "$out/cg-small.out" "$cli" run --quiet --threads 1 "$small")
  b=$(ir "$out/cg-big.out" "$cli" run --quiet --threads 1 "$big")
  local rows=1000
  echo "total: $(per $((b - a)) $rows) instructions/row (1,200 rows minus 200 rows, over 1,000)"
  # The front end is inlined into the loader: its own symbol is the
  # fast parser's (serde_yaml's fallback would show under load only).
  for phase in "load (read + parse + validate):faultmatrix::engine::discover::load_one" \
    "  of which YAML front end:faultmatrix_core::base::yaml::fast::from_str" \
    "row result (run + judge + the row's line):faultmatrix::engine::run::row_result" \
    "  run (execute the row):faultmatrix::exec::run::run_row_with" \
    "  judge (verdict):faultmatrix::verdict::judge" \
    "  the row's line (JUnit):faultmatrix_core::model::matrix::Matrix::row_pos"; do
    local label=${phase%%:*} pat=${phase#*:}
    local x y
    x=$(incl "$out/cg-small.out" "$pat")
    y=$(incl "$out/cg-big.out" "$pat")
    if [ -n "$x" ] && [ -n "$y" ]; then
      echo "$label: $(per $((y - x)) $rows)"
    else
      echo "$label: (function $pat not found in the profile)"
    fi
  done
  echo "(the whole profile: callgrind_annotate --inclusive=yes $out/cg-big.out)"
  # The model cache (`run --cache DIR`): one run of each tree fills it,
  # then the same two runs are counted reading it back.
  local cache="$out/model-cache"
  rm -rf "$cache"
  "$cli" run --quiet --threads 1 --cache "$cache" "$small" > /dev/null
  "$cli" run --quiet --threads 1 --cache "$cache" "$big" > /dev/null
  a=$(ir "$out/cg-small-cached.out" "$cli" run --quiet --threads 1 --cache "$cache" "$small")
  b=$(ir "$out/cg-big-cached.out" "$cli" run --quiet --threads 1 --cache "$cache" "$big")
  echo "with the model cache (--cache, filled by an earlier run): $(per $((b - a)) $rows) instructions/row"
  local x y
  x=$(incl "$out/cg-small-cached.out" "faultmatrix::engine::discover::load_one")
  y=$(incl "$out/cg-big-cached.out" "faultmatrix::engine::discover::load_one")
  if [ -n "$x" ] && [ -n "$y" ]; then
    echo "  load (read + compare + decode): $(per $((y - x)) $rows)"
  fi
}

frontends() {
  echo "== in-process alternatives (instructions per row, callgrind, 200 rows x 5)"
  local rows=200 rep=5 base
  base=$(ir "$out/fe-text.out" target/release/examples/frontends text $rows $rep)
  for mode in serde_yaml value-then-typed yaml-rust2-events fast load load-clone runtime; do
    local n
    n=$(ir "$out/fe-$mode.out" target/release/examples/frontends "$mode" $rows $rep)
    echo "$mode: $(per $((n - base)) $((rows * rep)))"
  done
}

measure() { # label command... -> wall and peak memory (GNU time)
  local label=$1; shift
  /usr/bin/time -v -o "$out/time.txt" "$@" > "$out/stdout.txt" 2>&1 || true
  local wall kb
  wall=$(grep 'Elapsed (wall' "$out/time.txt" | awk '{print $NF}')
  kb=$(grep 'Maximum resident' "$out/time.txt" | awk '{print $NF}')
  echo "$label: wall $wall, peak $((kb / 1024)) MiB; $(grep -v '^\s*$' "$out/stdout.txt" | tail -1 | cut -c1-100)"
}

memory() {
  echo "== wall and peak memory (release CLI, all cores)"
  measure "10k rows (100 files x 100)" "$cli" run --quiet "$(tree 100 100)"
  measure "100k rows (1,000 files x 100)" "$cli" run --quiet "$(tree 1000 100)"
  measure "1M rows (10,000 files x 100)" "$cli" run --quiet "$(tree 10000 100)"
  # A 100k-row file of this shape (22 MB) is loaded a chunk of rows at a
  # time (engine::chunked; before, it was over the 16 MiB limit and did not
  # load); the 60k-row file (13.7 MB, the largest that loaded whole) stays
  # for comparison with earlier figures.
  measure "one 100k-row file: run" "$cli" run --quiet "$(tree 1 100000)"
  measure "one 60k-row file: run" "$cli" run --quiet "$(tree 1 60000)"
  measure "one 60k-row file: list" "$cli" list "$(tree 1 60000)"
  measure "one 100k-row file: list" "$cli" list "$(tree 1 100000)"
}

harness() {
  echo "== wall and peak memory of the cargo harness (release runner-tests/matrices.rs, all cores)"
  # FAULTMATRIX_BENCH_HARNESS: another build of the harness to measure.
  local harness=${FAULTMATRIX_BENCH_HARNESS:-}
  if [ -z "$harness" ]; then
    cargo test --release --quiet --test matrices --no-run 2> /dev/null
    harness=$(ls -t target/release/deps/matrices-* | grep -v '\.d$' | awk 'NR == 1')
  fi
  measure "harness, 10k rows" env FAULTMATRIX_MATRICES="$(tree 100 100)" "$harness" --quiet
  measure "harness, 100k rows" env FAULTMATRIX_MATRICES="$(tree 1000 100)" "$harness" --quiet
  measure "harness, 1M rows" env FAULTMATRIX_MATRICES="$(tree 10000 100)" "$harness" --quiet
  measure "harness, one 100k-row file" env FAULTMATRIX_MATRICES="$(tree 1 100000)" "$harness" --quiet
  measure "harness, one 100k-row file, --list" env FAULTMATRIX_MATRICES="$(tree 1 100000)" "$harness" --list
}

# A file of N zero-backoff rows against the reference system; the first
# ten carry the tag `sample` and the first hundred `hundred`, so every file
# runs the same rows.
wire_file() { # rows -> path
  local f="$out/wire2-$1.yaml"
  [ -f "$f" ] || python3 - "$1" "$f" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
out = ["title: wire bench", "policy:", "  routes:", "    - { name: A, attempts: 2 }",
       "    - { name: B, attempts: 2 }", "  backoff: { initial: 0s, factor: 2, cap: 0s }", "rows:"]
for r in range(n):
    out.append(f"  - name: row {r}")
    if r < 10:
        out.append("    tags: [sample, hundred]")
    elif r < 100:
        out.append("    tags: [hundred]")
    out += ["    inject:", "      A: [503, 503]", "      B: [200]", "    expect:", "      trace: |",
            "        A1 503 UPSTREAM_UNAVAILABLE retry", "        A2 503 UPSTREAM_UNAVAILABLE switch",
            "        B1 200 return", "      stop: success"]
open(path, "w").write("\n".join(out) + "\n")
PY
  echo "$f"
}

wire() {
  echo "== over the wire: rows of a file, real HTTP, one thread (wall per row, best of 5)"
  echo "   per row = (run --over-http - the same rows in process) / rows: the file's own load is not counted;"
  echo "   ten rows carry the process's first over-HTTP row (its sockets, client and runtime), a hundred amortize it"
  local n tag k
  for tag in sample:10 hundred:100; do
    k=${tag#*:}
    tag=${tag%%:*}
    for n in 100 500 2000; do
      local f http=999999999999 local_=999999999999 t0 t1 i
      f=$(wire_file "$n")
      for i in 1 2 3 4 5; do
        t0=$(date +%s%N)
        "$cli" run --quiet --over-http --threads 1 --tag "$tag" "$f" > "$out/stdout.txt" 2>&1 || true
        t1=$(date +%s%N)
        [ $((t1 - t0)) -lt "$http" ] && http=$((t1 - t0))
        t0=$(date +%s%N)
        "$cli" run --quiet --threads 1 --tag "$tag" "$f" > /dev/null 2>&1 || true
        t1=$(date +%s%N)
        [ $((t1 - t0)) -lt "$local_" ] && local_=$((t1 - t0))
      done
      echo "$k rows of a $n-row file: $(python3 -c "print(round(($http - $local_) / $k / 1e6, 2))") ms/row over the wire" \
        "(whole run $(python3 -c "print(round($http / 1e6, 1))") ms, in process $(python3 -c "print(round($local_ / 1e6, 1))") ms);" \
        "$(tail -1 "$out/stdout.txt")"
    done
  done
}

# Per test: wall of the whole `cargo nextest run` (cargo's start-up
# included), nextest's own summary time (its run alone), and one test
# process timed on its own. The floor is nextest running 100 trivial libtest
# tests (a crate generated under target/perf, no dependencies) in the same
# run: what any test pays under nextest on this machine, faultmatrix or not.
nextest_run() { # label dir-to-run-in env... -- args...
  local label=$1 dir=$2; shift 2
  local t0 t1 tests secs log="$PWD/$out/nextest-$label.txt"
  t0=$(date +%s%N)
  (cd "$dir" && env "$@" > "$log" 2>&1) || true
  t1=$(date +%s%N)
  tests=$(grep -cE '^\s+PASS' "$log" || true)
  secs=$(sed -nE 's/.*Summary \[ *([0-9.]+)s\].*/\1/p' "$log" | tail -1)
  echo "$label: $tests tests passed; wall $(python3 -c "print(round(($t1 - $t0) / max($tests, 1) / 1e6, 1))") ms/test" \
    "(cargo included), nextest's run $(python3 -c "print(round(float('${secs:-0}') * 1000 / max($tests, 1), 1))") ms/test"
}

process_ms() { # command... -> mean wall of 40 runs, ms
  local t0 t1
  t0=$(date +%s%N)
  for _ in $(seq 40); do "$@" > /dev/null 2>&1 || true; done
  t1=$(date +%s%N)
  python3 -c "print(round(($t1 - $t0) / 40 / 1e6, 2))"
}

nextest() {
  echo "== cargo nextest, debug profile, the 100 rows of one file (per test)"
  if ! command -v cargo-nextest > /dev/null; then
    echo "cargo-nextest is not installed"
    return
  fi
  local dir floor
  dir=$(tree 1 100)
  cargo test --quiet --test matrices --no-run 2> /dev/null
  floor="$out/nextest-floor"
  if [ ! -f "$floor/Cargo.toml" ]; then
    mkdir -p "$floor/src" "$floor/tests"
    printf '[package]\nname = "nextest-floor"\nversion = "0.1.0"\nedition = "2021"\n\n[workspace]\n' > "$floor/Cargo.toml"
    : > "$floor/src/lib.rs"
    python3 -c "print('\n'.join(f'#[test]\nfn t{i}() {{ assert_eq!({i} + 1, {i + 1}); }}' for i in range(100)))" > "$floor/tests/t.rs"
  fi
  (cd "$floor" && cargo test --quiet --offline --no-run 2> /dev/null)
  nextest_run faultmatrix . FAULTMATRIX_MATRICES="$dir" cargo nextest run --test matrices --no-fail-fast -j 1
  nextest_run floor "$floor" cargo nextest run --offline --no-fail-fast -j 1
  local bin fbin n
  bin=$(ls -t target/debug/deps/matrices-* | grep -v '\.d$' | awk 'NR == 1')
  fbin=$(ls -t "$floor"/target/debug/deps/t-* | grep -v '\.d$' | awk 'NR == 1')
  echo "one test process on its own (mean of 40): faultmatrix" \
    "$(FAULTMATRIX_MATRICES="$dir" process_ms "$bin" --exact "$dir/m0000.yaml::row 50") ms," \
    "floor $(process_ms "$fbin" --exact t50) ms"
  # One test process as nextest starts it, in instructions (callgrind).
  n=$(export FAULTMATRIX_MATRICES="$dir"; ir "$out/cg-nextest.out" "$bin" --exact "$dir/m0000.yaml::row 50")
  echo "one test process (--exact, debug): $(python3 -c "print(f'{$n:,}')") instructions"
}

# A clean `cargo build --tests` of a tiny consumer crate (bench/consumer.sh:
# one matrix, the reference system, the cargo harness) depending on
# faultmatrix by path with
# `default-features = false` and FAULTMATRIX_BENCH_FEATURES (default
# `harness`, the documented minimal set). FAULTMATRIX_BENCH_REV=<rev> builds
# against that commit (git archive), e.g. a "before"; by default the working
# tree. Its own empty target dir, offline, with this repository's Cargo.lock.
# Prints wall, CPU (user + system, GNU time, cargo and every rustc) and the
# packages compiled; wall is for orientation on a shared machine, CPU and
# the package count are the figures to compare.
build() {
  local features=${FAULTMATRIX_BENCH_FEATURES:-harness} rev=${FAULTMATRIX_BENCH_REV:-}
  local tmp src
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/faultmatrix-build.XXXXXX")
  if [ -n "$rev" ]; then
    src="$tmp/faultmatrix"
    mkdir -p "$src"
    git archive "$rev" | tar -x -C "$src"
  else
    src=$(pwd)
  fi
  echo "== clean build of a consumer crate (faultmatrix ${rev:-working tree}, features [$features], cargo build --tests)"
  local c="$tmp/consumer"
  bash bench/consumer.sh "$c" "$src" "$features"
  local load
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  if ! (cd "$c" && CARGO_TERM_PROGRESS_WHEN=never /usr/bin/time -v -o "$tmp/time.txt" \
    cargo build --tests --offline --timings --target-dir "$tmp/target" 2> "$tmp/build.txt"); then
    cat "$tmp/build.txt" >&2
    rm -rf "$tmp"
    return 1
  fi
  cp "$tmp/build.txt" "$out/build-log.txt"
  cp "$tmp/target/cargo-timings/cargo-timing.html" "$out/build-timing.html" 2> /dev/null || true
  local wall cpu crates
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tmp/time.txt")
  cpu=$(awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {print u + s}' "$tmp/time.txt")
  crates=$(grep -c '^ *Compiling ' "$tmp/build.txt" || true)
  echo "packages compiled: $crates; wall $wall (m:s); CPU $cpu s (user + system); load average before: $load"
  grep '^ *Compiling ' "$tmp/build.txt" | awk '{print $2}' | sort | tr '\n' ' ' > "$out/build-crates.txt"
  echo "(their names: $out/build-crates.txt; cargo's timings per crate: $out/build-timing.html)"
  # The consumer's row runs and passes (not timed).
  (cd "$c" && cargo test --offline --quiet --target-dir "$tmp/target" 2>&1 | grep -E '^test result' || true)
  rm -rf "$tmp"
}

peer() {
  echo "== the wiremock-rs way (bench/peer, issue 11), counted in one run with the reference system"
  if [ ! -f bench/peer/Cargo.toml ]; then
    echo "peer not built yet (bench/peer is issue 11's); no ratio to report"
    return
  fi
  # bench/seam.sh builds the peer crate and prints instructions per row for
  # the reference system, the HTTP seam and the wiremock-rs way, with ratios.
  bash bench/seam.sh
}

# Every part but `build` measures the release CLI.
if [ -z "${FAULTMATRIX_BENCH_CLI:-}" ] && [ "${parts[*]}" != build ]; then
  need_release # a given CLI is measured as built
fi
for p in "${parts[@]}"; do
  case "$p" in
    count | frontends | memory | harness | wire | nextest | peer | build) "$p" ;;
    *) echo "unknown part $p (count, frontends, memory, harness, wire, nextest, peer, build)" >&2; exit 2 ;;
  esac
done
