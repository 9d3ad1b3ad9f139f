//! Every row of `matrices/**/*.yaml` as a named test, run against the
//! built-in reference system: `cargo test --test matrices`.

fn main() {
    faultmatrix::harness::Harness::new("matrices").run();
}
