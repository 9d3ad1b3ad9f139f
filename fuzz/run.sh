#!/usr/bin/env bash
# Runs the fuzz targets for a bounded time each, on stable Rust.
#
#   bash fuzz/run.sh                 # every target, 60 s each
#   bash fuzz/run.sh sse 300         # one target, 300 s
#   bash fuzz/run.sh all 30          # every target, 30 s each
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). Stable Rust is enough:
# targets are built without a sanitizer (`-s none`; faultmatrix has no
# unsafe code of its own, and a Rust panic is what the targets look for)
# and with debug assertions and overflow checks (`-a`). For AddressSanitizer
# on stable, set FUZZ_SANITIZER=address: the script then sets
# RUSTC_BOOTSTRAP=1 so stable rustc accepts `-Zsanitizer`.
#
# New inputs go to fuzz/corpus/<target>/; a crash is saved under
# fuzz/artifacts/<target>/ and the script fails. Copy a crash to
# fuzz/regressions/<target>/ when you fix it: `cargo test --test suite
# fuzz_regressions::` replays both folders on stable Rust.
#
# Prints one line per target: executions, seconds, corpus size.
set -uo pipefail
cd "$(dirname "$0")"
what=${1:-all}
secs=${2:-60}
sanitizer=${FUZZ_SANITIZER:-none}
if [ "$sanitizer" != none ]; then
    export RUSTC_BOOTSTRAP=1
fi
targets=$(ls fuzz_targets | sed 's/\.rs$//')
if [ "$what" != all ]; then
    if ! echo "$targets" | grep -qx "$what"; then
        echo "unknown target \`$what\`: expected all or one of:" $targets >&2
        exit 2
    fi
    targets=$what
fi
flags=(-O -a -s "$sanitizer")
if [ "$what" = all ]; then
    cargo fuzz build "${flags[@]}" >/dev/null || exit 1
else
    cargo fuzz build "${flags[@]}" "$what" >/dev/null || exit 1
fi
failed=()
mkdir -p target/logs
for t in $targets; do
    mkdir -p "corpus/$t" "artifacts/$t"
    dirs=("corpus/$t")
    [ -d "regressions/$t" ] && dirs+=("regressions/$t")
    case $t in
        matrix | registry | tape) max_len=65536 ;;
        request_head | response) max_len=20000 ;; # past the 16 KiB head limit
        *) max_len=4096 ;;
    esac
    log="target/logs/$t.log"
    cargo fuzz run "${flags[@]}" "$t" "${dirs[@]}" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len="$max_len" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    printf '%-13s %12s executions in %ss, corpus %s inputs%s\n' "$t" "${execs:-?}" "$secs" \
        "$(ls "corpus/$t" | wc -l)" "$([ $rc = 0 ] || echo ", FAILED (see fuzz/$log)")"
    [ $rc = 0 ] || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "crashed: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
