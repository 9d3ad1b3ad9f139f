//! The authoring subcommands and run reports of the CLI: `schema`,
//! `snapshots`, and the report files and terminal output of `run`
//! (`--junit`, `--markdown`, `--html`, colour, GitHub annotations).
//! [`crate::cli`] parses the arguments and calls in here.

use std::io::Write;
use std::path::PathBuf;

use crate::base::env::Env;
use crate::cli::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use crate::engine::discover::{self, Loaded};
use crate::engine::results::{RowResult, Summary};
use crate::load::Loader;
use crate::reports;
use crate::reports::text;

/// `schema` options.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// Which file format.
    #[arg(value_enum, default_value = "matrix")]
    pub kind: SchemaKind,
}

/// The file formats `schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaKind {
    /// A matrix file (`title`, `policy`, `rows`).
    Matrix,
    /// A reason-code registry (`version`, `codes`).
    Registry,
    /// An explore invariants file (`invariants`, `except`, `generate`).
    Invariants,
}

/// `snapshots` options.
#[derive(Debug, clap::Args)]
pub struct SnapshotsArgs {
    /// Files, directories or glob patterns (default: `matrices`).
    pub paths: Vec<String>,
    /// Delete unreferenced snapshot files instead of failing.
    #[arg(long)]
    pub delete_unreferenced: bool,
}

/// Report files written by `run`.
#[derive(Debug, Default, clap::Args)]
pub struct ReportArgs {
    /// Write a JUnit XML report (one testcase per row) to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write a Markdown summary (for a pull-request comment) to this file.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write a self-contained HTML report with trace timelines to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Colour: auto (a terminal and no NO_COLOR), always or never.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub color: ColorChoice,
}

/// When to colour.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// `faultmatrix codes [REGISTRY]`: prints the table; exit status 0, or 2
/// when the registry cannot be read or does not load.
pub fn codes(path: Option<&str>) -> u8 {
    use crate::load::cache::{RegistryCache, RegistryErrorKind};
    let default = std::path::Path::new("matrices/codes.yaml");
    let registry = match path {
        None if !default.exists() => crate::load::registry::builtin(),
        _ => {
            let p = path.map_or(default, std::path::Path::new);
            if let Ok(text) = std::fs::read_to_string(p) {
                if !crate::engine::discover::is_registry(&text) {
                    eprintln!(
                        "error: `{}` is a matrix, not a registry (a registry has `codes:` and no `rows:`)",
                        p.display()
                    );
                    return EXIT_BAD_INPUT;
                }
            }
            match RegistryCache::new().load(p).map_err(|e| e.kind) {
                Ok(r) => r,
                Err(RegistryErrorKind::Read(e)) => {
                    eprintln!("error: cannot read registry `{}`: {e}", p.display());
                    return EXIT_BAD_INPUT;
                }
                Err(RegistryErrorKind::Invalid(e)) => {
                    eprint!("{e}");
                    return EXIT_BAD_INPUT;
                }
            }
        }
    };
    print!("{}", crate::reports::table::markdown(&registry));
    EXIT_OK
}

/// `faultmatrix schema [matrix|registry|invariants]`.
pub fn schema(a: &SchemaArgs) -> u8 {
    let kind = match a.kind {
        SchemaKind::Matrix => crate::load::schema::Kind::Matrix,
        SchemaKind::Registry => crate::load::schema::Kind::Registry,
        SchemaKind::Invariants => crate::load::schema::Kind::Invariants,
    };
    print!("{}", crate::load::schema::render(kind));
    EXIT_OK
}

/// `faultmatrix snapshots`: fails on snapshot files no row names and on
/// pending `.snap.new` files (not reviewed yet).
pub fn snapshots(a: &SnapshotsArgs, loader: &Loader) -> u8 {
    let files = match crate::engine::plan::resolve(&a.paths, &loader.cwd) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut matrices = Vec::new();
    let mut bad = false;
    for (f, l) in files.iter().zip(discover::load_all(
        &files,
        loader,
        discover::default_threads(),
    )) {
        match l {
            Loaded::Matrix(m) => matrices.push(*m),
            Loaded::Registry => {}
            Loaded::Errors(e) => {
                eprintln!("{e}");
                eprintln!("error: {} does not load", f.display);
                bad = true;
            }
        }
    }
    if bad {
        return EXIT_BAD_INPUT;
    }
    let referenced: usize = matrices
        .iter()
        .map(|m| m.rows.iter().filter(|r| r.expect.snapshot).count())
        .sum();
    let unref = crate::verdict::snapshot::unreferenced(&matrices);
    let pending = crate::verdict::snapshot::pending(&matrices);
    let mut failed = false;
    for p in &unref {
        if a.delete_unreferenced {
            match std::fs::remove_file(p) {
                Ok(()) => println!("deleted unreferenced snapshot {}", p.display()),
                Err(e) => {
                    eprintln!("error: cannot delete {}: {e}", p.display());
                    failed = true;
                }
            }
        } else {
            println!(
                "error: unreferenced snapshot {} (no snapshot row names it: delete it, or run `faultmatrix snapshots --delete-unreferenced`)",
                p.display()
            );
            failed = true;
        }
    }
    for p in &pending {
        println!(
            "error: pending snapshot {} was not reviewed (run `cargo insta review`)",
            p.display()
        );
        failed = true;
    }
    println!(
        "{referenced} snapshot rows, {} unreferenced, {} pending",
        if a.delete_unreferenced {
            0
        } else {
            unref.len()
        },
        pending.len()
    );
    if failed {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

/// Whether stdout gets colour, as `--color` and the terminal say.
pub fn colour(a: &ReportArgs, env: &Env) -> bool {
    match a.color {
        ColorChoice::Auto => reports::term::colour_stdout(env),
        ColorChoice::Always => true,
        ColorChoice::Never => false,
    }
}

/// Writes the text report to stdout (coloured on a terminal), GitHub
/// annotations under Actions, and the requested report files.
pub fn write_reports(
    a: &ReportArgs,
    results: &[RowResult],
    summary: &Summary,
    quiet: bool,
    env: &Env,
) -> Result<(), String> {
    let mut text = Vec::new();
    text::write_text(&mut text, results, summary, quiet).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&text);
    let colour = colour(a, env);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let shown = if colour {
        reports::term::colourise(&text)
    } else {
        text.into_owned()
    };
    let _ = out.write_all(shown.as_bytes());
    if reports::github::enabled(env) {
        for line in reports::github::annotations(results) {
            let _ = writeln!(out, "{line}");
        }
        // The job summary page shows the same Markdown as a PR comment.
        if let Some(p) = env.non_empty("GITHUB_STEP_SUMMARY") {
            let appended = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(p)
                .and_then(|mut f| {
                    f.write_all(reports::markdown::render_with(results, summary).as_bytes())
                });
            if let Err(e) = appended {
                eprintln!("warning: cannot append to GITHUB_STEP_SUMMARY: {e}");
            }
        }
    }
    let _ = out.flush();
    let write = |path: &PathBuf, body: String| {
        std::fs::write(path, body).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    if let Some(p) = &a.junit {
        write(p, reports::junit::render(results))?;
    }
    if let Some(p) = &a.markdown {
        write(p, reports::markdown::render_with(results, summary))?;
    }
    if let Some(p) = &a.html {
        write(p, reports::html::render("faultmatrix report", results))?;
    }
    Ok(())
}
