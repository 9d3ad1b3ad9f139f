//! `faultmatrix explore FILE`: generated failure sequences against the
//! file's system, checked against its invariants; the first violation is
//! shrunk and printed as a row (`--write` appends it to a file). Exit 0
//! when every case held, 1 on a violation, 2 on bad input.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use crate::base::env::Env;
use crate::cli::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use crate::engine::explore::{self, Explorer, Options};
use crate::exec::run::ExecOptions;
use crate::load::systems::Systems;

/// `explore` options.
#[derive(Debug, clap::Args)]
pub struct ExploreArgs {
    /// The matrix file whose system, policy and registry are explored.
    pub file: String,
    /// Most cases to run.
    #[arg(long, default_value_t = 10_000)]
    pub cases: u64,
    /// The seed cases are generated from (the same seed gives the same cases on any thread count).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop starting new cases after this much real time (`30s`, `2m`).
    #[arg(long, value_name = "T")]
    pub time: Option<String>,
    /// The invariants file (default: `<stem>.invariants.yaml` beside FILE, else every built-in invariant).
    #[arg(long, value_name = "FILE")]
    pub invariants: Option<String>,
    /// Append the shrunk row to this matrix file (`--write` alone: FILE itself).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "")]
    pub write: Option<String>,
    /// Worker threads (default: available cores).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs `explore`.
pub fn explore(a: &ExploreArgs, systems: &Systems, env: Env) -> u8 {
    let until = match &a.time {
        None => None,
        Some(t) => match crate::base::duration::parse(t) {
            Ok(d) => Some(Instant::now() + d),
            Err(e) => {
                eprintln!("error: --time: {e}");
                return EXIT_BAD_INPUT;
            }
        },
    };
    let cwd = env.cwd.clone();
    let path = cwd.join(&a.file);
    let inv_path = a.invariants.as_ref().map(|p| cwd.join(p));
    let inv = inv_path.as_deref().zip(a.invariants.as_deref());
    let ex = match Explorer::open(&path, &a.file, inv, systems, ExecOptions::from_env(env)) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{}", e.trim_end());
            return EXIT_BAD_INPUT;
        }
    };
    let opts = Options {
        seed: a.seed,
        cases: a.cases,
        threads: a
            .threads
            .unwrap_or_else(crate::engine::pool::default_threads)
            .max(1),
        until,
        ..Options::default()
    };
    let report = ex.explore(&opts);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "explore {}: system `{}`, {} invariant{} checked, seed {}",
        a.file,
        ex.matrix.system_name(),
        report.checked.len(),
        if report.checked.len() == 1 { "" } else { "s" },
        a.seed
    );
    for (name, why) in &report.unchecked {
        let _ = writeln!(out, "not checked: `{name}`: {why}");
    }
    let secs = report.elapsed.as_secs_f64().max(1e-9);
    let rate = report.cases as f64 / secs;
    let Some(found) = report.found else {
        let _ = writeln!(
            out,
            "ok: {} cases held every invariant in {:.2}s ({:.0} cases/s on {} thread{})",
            report.cases,
            secs,
            rate,
            opts.threads,
            if opts.threads == 1 { "" } else { "s" }
        );
        return EXIT_OK;
    };
    let verified = ex.verify(&found.row, &found.row_name);
    let _ = writeln!(
        out,
        "FAILED: invariant `{}` broken by case {} (seed {}): {}",
        found.violation.invariant, found.index, found.seed, found.violation.message
    );
    let _ = writeln!(
        out,
        "shrunk from {} to {} call{} in {} runs",
        found.original_calls,
        found.calls,
        if found.calls == 1 { "" } else { "s" },
        found.shrink_runs
    );
    match (&verified.system, &verified.reference) {
        // No reference to compare with: the row expects what was observed.
        (Ok(()), None) => {
            let _ = writeln!(
                out,
                "the row, loaded back, reproduces what `{}` did (no reference policy to compare with): edit its `expect` to what must happen:",
                ex.matrix.system_name()
            );
        }
        (Err(e), None) => {
            let _ = writeln!(
                out,
                "the row, loaded back, does NOT reproduce what `{}` did (is the system deterministic?):\n{e}",
                ex.matrix.system_name()
            );
        }
        (system, Some(reference)) => {
            let _ = writeln!(
                out,
                "the row {} against `{}`{}:",
                if system.is_err() {
                    "fails"
                } else {
                    "passes (!)"
                },
                ex.matrix.system_name(),
                match reference {
                    Ok(()) => " and passes against the reference".to_string(),
                    Err(e) => format!(" and FAILS against the reference too:\n{e}"),
                }
            );
        }
    }
    let _ = writeln!(out, "\n{}", found.row);
    let _ = writeln!(
        out,
        "rerun: faultmatrix explore {} --seed {} --cases {}",
        a.file,
        found.seed,
        found.index + 1
    );
    if let Some(w) = &a.write {
        let target = if w.is_empty() {
            a.file.as_str()
        } else {
            w.as_str()
        };
        match append_row(&cwd.join(target), &found.row) {
            Ok(()) => {
                let _ = writeln!(out, "appended the row to {target}");
            }
            Err(e) => {
                eprintln!("error: cannot append the row to `{target}`: {e}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    EXIT_FAILED
}

/// Appends a row to a matrix file's rows, atomically (a temporary file
/// beside it, then a rename).
fn append_row(path: &Path, row: &str) -> std::io::Result<()> {
    let text = std::fs::read_to_string(path)?;
    let new = explore::with_row(&text, row, true);
    let tmp = path.with_extension("yaml.explore-tmp");
    std::fs::write(&tmp, new)?;
    std::fs::rename(&tmp, path)
}
