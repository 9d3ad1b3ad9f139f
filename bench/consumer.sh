#!/usr/bin/env bash
# Writes a tiny consumer crate of faultmatrix: it only runs matrices, through
# the cargo harness, with one matrix of the reference system. Used by
# `bash bench/perf.sh build` (its clean build time) and `.ci/features.sh`
# (it builds and runs with the documented minimal features).
#
#   bash bench/consumer.sh DIR FAULTMATRIX_PATH FEATURES [command]
#
# FEATURES is a comma-separated list (`harness`); `default-features = false`
# always. With `command`, a second matrix has a command system, which a
# build without the `wire` feature must mark as a row that cannot run here.
set -euo pipefail
dir=$1 src=$2 features=$3 extra=${4:-}
mkdir -p "$dir/tests" "$dir/matrices" "$dir/src"
list=$(python3 -c "import sys; print(', '.join('\"%s\"' % f for f in sys.argv[1].split(',') if f))" "$features")
cat > "$dir/Cargo.toml" <<EOF
[package]
name = "consumer"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
faultmatrix = { path = "$src", default-features = false, features = [$list] }

[[test]]
name = "matrices"
harness = false

[workspace]
EOF
: > "$dir/src/lib.rs"
cat > "$dir/tests/matrices.rs" <<'EOF'
fn main() -> std::process::ExitCode {
    faultmatrix::harness::Harness::new("matrices").run()
}
EOF
cat > "$dir/matrices/retry.yaml" <<'EOF'
title: one retry, then the backup route
system: reference
policy:
  routes:
    - { name: A, attempts: 2 }
    - { name: B, attempts: 1 }
  backoff: { initial: 1s, factor: 2, cap: 30s, jitter: none }
rows:
  - name: 503 twice on A then B succeeds
    inject:
      A: [503, 503]
      B: [200]
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s
        A2 503 UPSTREAM_UNAVAILABLE switch
        B1 200 return
EOF
if [ "$extra" = command ]; then
  cat > "$dir/matrices/command.yaml" <<'EOF'
title: a client run as a command
system:
  command: [sh, -c, "exit 0"]
  routes: [A]
rows:
  - name: one call
    inject:
      A: [200]
    expect:
      trace: |
        A1 200 return
EOF
fi
cp "$src/Cargo.lock" "$dir/Cargo.lock"
