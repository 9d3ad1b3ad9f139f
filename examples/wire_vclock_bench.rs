//! Benchmark of virtual-clock command rows (issue 10): real time per row
//! beyond start-up (from the row's first request to the shim's `exit`; and
//! from the shim's hello, which includes the program building its client),
//! start-up itself (process start or fork to hello), and a whole suite's real time, warm
//! (Python: one parent per worker, a forked child per row; Node: a spare
//! process started and `require`d ahead of each row) and cold (one process
//! per row). A failing row's failure goes to stderr.
//!
//! ```sh
//! cargo run --example wire_vclock_bench                      # runner-tests/wire/openai-python/*.yaml, warm then cold
//! cargo run --example wire_vclock_bench -- --warm FILE...   # only warm
//! cargo run --example wire_vclock_bench -- --cold FILE...   # only one process per row
//! ```
//!
//! Needs `.venv-shims` (`.ci/run` makes it). Rows run one after another on
//! one worker, so the numbers are per row, not hidden by parallelism; every
//! row is also judged, and a failing row is counted and named. Real time,
//! measured on whatever else the machine is doing: report the load with it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use faultmatrix::engine::discover::{self, Found, Loaded};
use faultmatrix::model::SystemUnderTest;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// One phase's numbers over the rows: median and max.
fn stat(label: &str, v: &[f64]) -> String {
    let mut v = v.to_vec();
    let max = v.iter().copied().fold(0.0, f64::max);
    format!("{label} median {:.1} ms, max {:.1} ms", median(&mut v), max)
}

fn run(files: &[PathBuf], warm: bool, env: &faultmatrix::base::env::Env) -> bool {
    let label = if warm { "warm" } else { "cold" };
    println!("{label}: load average before: {}", load_average());
    let t0 = Instant::now();
    let mut beyond = Vec::new();
    let mut after_hello = Vec::new();
    let mut set_up = Vec::new();
    let mut wrap_up = Vec::new();
    let mut whole = Vec::new();
    let mut start = Vec::new();
    let mut parent_start = Duration::ZERO;
    let mut failed = Vec::new();
    let mut rows = 0;
    for path in files {
        let found = Found {
            path: path.clone(),
            display: path.display().to_string(),
        };
        let mut m = match discover::load_one(&found, &faultmatrix::load::Loader::default()) {
            Loaded::Matrix(m) => *m,
            Loaded::Errors(e) => {
                eprintln!("{e}");
                return false;
            }
            Loaded::Registry => continue,
        };
        let Some(spec) = m.command().cloned() else {
            continue;
        };
        let mut spec = (*spec).clone();
        spec.warm = warm && spec.warm;
        m.system = SystemUnderTest::Command(Arc::new(spec.clone()));
        for row in &m.rows {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            let (obs, stats) = rt.block_on(faultmatrix::exec::wire::vclock::run_row_stats(
                &m, row, &spec, env,
            ));
            rows += 1;
            let verdict = faultmatrix::verdict::check(&m, row, &obs);
            let ok = verdict.is_ok();
            if let Err(f) = verdict {
                failed.push(format!("{}::{}", path.display(), row.name));
                eprintln!("{}", f.render());
            }
            // A row that had to start a warm parent: its imports are the
            // worker's start-up, reported apart.
            let started_parent = stats.parent > Duration::from_millis(50);
            if started_parent {
                parent_start += stats.parent;
            }
            beyond.push(ms(stats.from_first_request));
            after_hello.push(ms(stats.after_hello));
            set_up.push(ms(stats.set_up));
            wrap_up.push(ms(stats.wrap_up));
            whole.push(ms(stats.whole.saturating_sub(if started_parent {
                stats.parent
            } else {
                Duration::ZERO
            })));
            start.push(ms(stats.start_up));
            println!(
                "{label} {:>7.1} ms first request -> exit {:>7.1} set-up {:>7.1} wrap-up {:>7.1} hello -> end {:>7.1} start-up {:>7.1} whole{} {:>3} advances  {}{}",
                ms(stats.from_first_request),
                ms(stats.set_up),
                ms(stats.wrap_up),
                ms(stats.after_hello),
                ms(stats.start_up),
                ms(stats.whole),
                if started_parent {
                    format!(" (a parent started: {:.0} ms)", ms(stats.parent))
                } else {
                    String::new()
                },
                stats.rounds,
                row.name,
                if ok { "" } else { "  FAILED" }
            );
        }
    }
    let total = t0.elapsed();
    println!(
        "{label}: {rows} rows in {:.1} s real ({:.1} s of it starting warm parents); {} failed; load average after: {}",
        total.as_secs_f64(),
        parent_start.as_secs_f64(),
        failed.len(),
        load_average()
    );
    println!(
        "  {}",
        stat("first request -> exit (the row's own time):", &beyond)
    );
    println!(
        "  {}",
        stat("hello -> first request (the program's set-up):", &set_up)
    );
    println!(
        "  {}",
        stat("exit -> end of row (the runner's wrap-up):", &wrap_up)
    );
    println!("  {}", stat("hello -> end:", &after_hello));
    println!("  {}", stat("spawn or fork -> hello (start-up):", &start));
    println!(
        "  {}",
        stat("whole row, a parent's start excluded:", &whole)
    );
    for f in &failed {
        println!("  failed: {f}");
    }
    failed.is_empty()
}

fn main() -> std::process::ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::env::set_current_dir(root).expect("the crate root");
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let only_warm = args.iter().any(|a| a == "--warm");
    let only_cold = args.iter().any(|a| a == "--cold");
    args.retain(|a| a != "--warm" && a != "--cold");
    let mut files: Vec<PathBuf> = args.iter().map(PathBuf::from).collect();
    if files.is_empty() {
        let dir = root.join("runner-tests/wire/openai-python");
        let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
        v.sort();
        files = v
            .into_iter()
            .map(|p| p.strip_prefix(root).map(Path::to_path_buf).unwrap_or(p))
            .collect();
    }
    let mut env = faultmatrix::base::env::Env::capture();
    if env.var("FAULTMATRIX_PYTHON").is_none() {
        let py = root.join(".venv-shims/bin/python");
        env.set("FAULTMATRIX_PYTHON", py.display().to_string());
    }
    let mut ok = true;
    if !only_cold {
        ok &= run(&files, true, &env);
    }
    if !only_warm {
        ok &= run(&files, false, &env);
    }
    if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
