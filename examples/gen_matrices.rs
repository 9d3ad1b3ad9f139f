//! Generates a tree of matrix files for benchmarks:
//! `cargo run --release --example gen_matrices -- DIR FILES ROWS`.
//!
//! Each row is the seed article's "503 twice on A, then B" case: three
//! calls, a one-second backoff, a route switch, an exact trace.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: gen_matrices DIR FILES ROWS";
    let dir = PathBuf::from(args.next().expect(usage));
    let files: usize = args
        .next()
        .expect(usage)
        .parse()
        .expect("FILES is a number");
    let rows: usize = args.next().expect(usage).parse().expect("ROWS is a number");
    std::fs::create_dir_all(&dir).expect("create the output directory");
    for f in 0..files {
        let mut s = String::new();
        writeln!(s, "title: bench {f}").unwrap();
        s.push_str("policy:\n  routes:\n    - { name: A, attempts: 2 }\n    - { name: B, attempts: 2 }\n  backoff: { initial: 1s, factor: 2, cap: 30s }\nrows:\n");
        for r in 0..rows {
            writeln!(s, "  - name: row {r}").unwrap();
            s.push_str("    inject:\n      A: [503, 503]\n      B: [200]\n    expect:\n      trace: |\n        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s\n        A2 503 UPSTREAM_UNAVAILABLE switch\n        B1 200 return\n      stop: success\n");
        }
        std::fs::write(dir.join(format!("m{f:04}.yaml")), s).expect("write a matrix file");
    }
    println!(
        "wrote {} rows in {files} files under {}",
        files * rows,
        dir.display()
    );
}
