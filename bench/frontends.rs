//! Alternatives for the in-process cost of a row, counted one at a time
//! under callgrind by `bench/perf.sh frontends` (docs/running.md):
//!
//! `cargo run --release --example frontends -- MODE ROWS REPEAT`
//!
//! Each mode handles a generated matrix text of ROWS bench rows (the
//! three-call row of `gen_matrices`) REPEAT times; the script subtracts the
//! `text` mode (generation alone) and divides by ROWS × REPEAT.
//!
//! | mode | what it does per text |
//! |---|---|
//! | `text` | nothing beyond generating the text |
//! | `serde_yaml` | serde_yaml straight into the typed file shape |
//! | `value-then-typed` | serde_yaml into a `Value` tree, then the typed shape from it |
//! | `yaml-rust2-events` | yaml-rust2's event parser alone (a floor for event-based front ends) |
//! | `fast` | the fast front end (`base::yaml::from_str`) into the typed shape |
//! | `load` | the whole load: front end and validation into the model |
//! | `runtime` | building and dropping one paused runtime per row |
//! | `load-clone` | `load`, then a clone of every loaded row and its drop (minus `load`: the floor for reading a row back from any cache of parsed models, which must allocate what the model owns) |

use std::hint::black_box;

use faultmatrix::base::yaml::{self, Value};
use faultmatrix::load::raw::{RawRow, RawSettings};
use faultmatrix::load::Loader;

/// The typed shape of a matrix file (as the loader's fast path reads it).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Shape {
    title: String,
    #[serde(default)]
    system: Option<Value>,
    #[serde(default)]
    policy: Option<Value>,
    #[serde(default)]
    registry: Option<String>,
    #[serde(default)]
    defaults: Option<RawSettings>,
    #[serde(default)]
    tapes: Option<Value>,
    rows: Vec<RawRow>,
}

fn text(rows: usize) -> String {
    let mut s = String::from("title: bench\npolicy:\n  routes:\n    - { name: A, attempts: 2 }\n    - { name: B, attempts: 2 }\n  backoff: { initial: 1s, factor: 2, cap: 30s }\nrows:\n");
    for r in 0..rows {
        s.push_str(&format!("  - name: row {r}\n"));
        s.push_str("    inject:\n      A: [503, 503]\n      B: [200]\n    expect:\n      trace: |\n        A1 503 UPSTREAM_UNAVAILABLE retry wait=1s\n        A2 503 UPSTREAM_UNAVAILABLE switch\n        B1 200 return\n      stop: success\n");
    }
    s
}

struct Sink;

impl yaml_rust2::parser::MarkedEventReceiver for Sink {
    fn on_event(&mut self, ev: yaml_rust2::parser::Event, _mark: yaml_rust2::scanner::Marker) {
        black_box(ev);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: frontends MODE ROWS REPEAT";
    let mode = args.next().expect(usage);
    let rows: usize = args.next().expect(usage).parse().expect("ROWS is a number");
    let repeat: usize = args
        .next()
        .expect(usage)
        .parse()
        .expect("REPEAT is a number");
    let loader = Loader::default();
    for _ in 0..repeat {
        let t = text(rows);
        match mode.as_str() {
            "text" => {
                black_box(&t);
            }
            "serde_yaml" => {
                let s: Shape = yaml::from_str_reference(&t).expect("the bench text parses");
                assert_eq!(s.rows.len(), rows);
            }
            "value-then-typed" => {
                let v: Value = yaml::from_str_reference(&t).expect("the bench text parses");
                let s: Shape = yaml::from_value(&v, &[]).expect("the bench text fits");
                assert_eq!(s.rows.len(), rows);
            }
            "yaml-rust2-events" => {
                let mut p = yaml_rust2::parser::Parser::new_from_str(&t);
                p.load(&mut Sink, false).expect("the bench text parses");
            }
            "fast" => {
                let s: Shape = yaml::from_str(&t).expect("the bench text parses");
                assert_eq!(s.rows.len(), rows);
            }
            "load" => {
                let m = loader
                    .load_text("bench.yaml", &t, None)
                    .expect("the bench text loads");
                assert_eq!(m.rows.len(), rows);
            }
            "load-clone" => {
                let m = loader
                    .load_text("bench.yaml", &t, None)
                    .expect("the bench text loads");
                let rows = black_box(m.rows.clone());
                assert_eq!(rows.len(), m.rows.len());
            }
            "runtime" => {
                for _ in 0..rows {
                    let rt = faultmatrix::exec::runtime::paused_runtime();
                    rt.block_on(async { black_box(1) });
                }
            }
            other => panic!("unknown mode {other}: {usage}"),
        }
    }
}
