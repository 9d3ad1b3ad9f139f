//! The over-the-wire subcommands: `faultmatrix serve` (a row's scripts on
//! loopback for manual exploration or other test frameworks) and
//! `faultmatrix client` (the reference controller run as a command against
//! real base URLs, so a matrix written for the reference system can be
//! checked over HTTP with `faultmatrix run --over-http`).

use std::io::Write;
use std::sync::Arc;
use std::time::SystemTime;

use crate::base::env::Env;
use crate::exec::wire::client::HttpTransport;
use crate::exec::wire::command::{url_var, CommandSpec};
use crate::exec::wire::server::{FixtureServer, ServerOptions};
use crate::model::{Matrix, SystemUnderTest};
use crate::Systems;

/// `serve` options.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The matrix file.
    pub file: String,
    /// Serve only this row (default: every row, each on its own ports).
    #[arg(long)]
    pub row: Option<String>,
    /// Print nothing per call.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `client` options (defaults come from the variables the runner sets).
#[derive(Debug, clap::Args)]
pub struct ClientArgs {
    /// The matrix file (default: `$FAULTMATRIX_FILE`).
    #[arg(long)]
    pub file: Option<String>,
    /// The row (default: `$FAULTMATRIX_ROW`).
    #[arg(long)]
    pub row: Option<String>,
    /// Path requested below each base URL.
    #[arg(long, default_value = "/v1/chat/completions")]
    pub path: String,
}

fn load(file: &str, systems: &Systems) -> Result<Matrix, String> {
    crate::load::load_file(std::path::Path::new(file), file, systems).map_err(|e| e.to_string())
}

/// `faultmatrix serve FILE [--row NAME]`: exit code per [`crate::cli`].
pub fn serve(a: &ServeArgs, systems: &Systems) -> u8 {
    let m = match load(&a.file, systems) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return crate::cli::exit::EXIT_BAD_INPUT;
        }
    };
    let rows: Vec<&crate::model::Row> = match &a.row {
        Some(name) => match m.rows.iter().find(|r| &r.name == name) {
            Some(r) => vec![r],
            None => {
                let hint =
                    crate::base::diag::hint_suffix(name, m.rows.iter().map(|r| r.name.as_str()));
                eprintln!("error: no row named `{name}` in {}{hint}", a.file);
                return crate::cli::exit::EXIT_BAD_INPUT;
            }
        },
        None => m.rows.iter().collect(),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start a runtime: {e}");
            return crate::cli::exit::EXIT_BAD_INPUT;
        }
    };
    rt.block_on(async {
        let mut servers = Vec::new();
        for r in &rows {
            let options = ServerOptions {
                max_calls: r.settings.max_calls,
                log: !a.quiet,
                create: r.settings.request.create,
                body_paths: crate::model::requests::body_paths(&r.expect.requests),
            };
            match FixtureServer::start_with(r.inject(), options).await {
                Ok(s) => servers.push((r, s)),
                Err(e) => {
                    eprintln!("error: cannot bind 127.0.0.1: {e}");
                    return crate::cli::exit::EXIT_BAD_INPUT;
                }
            }
        }
        {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for (r, s) in &servers {
                let _ = writeln!(out, "row {}", r.name);
                for l in s.listeners() {
                    let _ = writeln!(out, "  {}={}", url_var(&l.route), l.url());
                }
            }
            let _ = writeln!(out, "serving on 127.0.0.1; Ctrl-C to stop");
            let _ = out.flush();
        }
        let _ = tokio::signal::ctrl_c().await;
        for (r, s) in &servers {
            let order: Vec<&str> = r.inject().iter().map(|x| x.route.as_str()).collect();
            let report = s.finish(&order);
            let mut calls = crate::exec::wire::command::records(&report.calls);
            // Side calls (keyed scripts) are not attempts: not in the trace.
            calls.retain(|c| crate::model::split_key(&c.route).1.is_none());
            let lines = crate::exec::trace::observe(
                &calls,
                None,
                crate::exec::trace::Ending::Hung,
                &m.registry,
                m.body_paths(),
            );
            println!("row {}: {} call(s)", r.name, lines.len());
            for l in &lines {
                let mut l = l.clone();
                if l.decision == "hung" {
                    // The server cannot know what the client decided last.
                    l.decision = "(last)";
                }
                println!("  {}", l.render(None));
            }
            for f in &report.failures {
                println!("  note: {f}");
            }
        }
        crate::cli::exit::EXIT_OK
    })
}

/// `faultmatrix client`: runs the file's `policy` as the reference system
/// over HTTP against `FAULTMATRIX_URL_<ROUTE>`, prints the JSON result.
/// Exit 0 on success, 1 on a final error, 2 on bad input.
pub fn client(a: &ClientArgs, systems: &Systems, vars: &Env) -> u8 {
    let env = |k: &str| vars.non_empty(k).map(str::to_string);
    let (Some(file), Some(row_name)) = (
        a.file.clone().or_else(|| env("FAULTMATRIX_FILE")),
        a.row.clone().or_else(|| env("FAULTMATRIX_ROW")),
    ) else {
        eprintln!("error: give --file and --row, or run under `faultmatrix run` (FAULTMATRIX_FILE, FAULTMATRIX_ROW)");
        return crate::cli::exit::EXIT_BAD_INPUT;
    };
    let m = match load(&file, systems) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return crate::cli::exit::EXIT_BAD_INPUT;
        }
    };
    let Some(row) = m.rows.iter().find(|r| r.name == row_name) else {
        eprintln!("error: no row named `{row_name}` in {file}");
        return crate::cli::exit::EXIT_BAD_INPUT;
    };
    // The policy block, built as the reference system.
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let policy = crate::base::yaml::parse_value(&text)
        .ok()
        .and_then(|v| v.get("policy").cloned())
        .unwrap_or(crate::base::yaml::Value::Null);
    let built = match crate::load::policy::build_reference(&policy, &m.registry) {
        Ok(b) => b,
        Err(errors) => {
            for e in errors {
                eprintln!("error: policy: {}", e.message);
            }
            return crate::cli::exit::EXIT_BAD_INPUT;
        }
    };
    let routes: Vec<String> = built
        .routes
        .clone()
        .unwrap_or_else(|| row.scripted_routes());
    let mut bases = Vec::new();
    for r in &routes {
        // Routes without a listener get an address nothing listens on.
        let url = env(&url_var(r)).unwrap_or_else(|| "http://127.0.0.1:9".into());
        bases.push((r.clone(), url));
    }
    let ca_file = crate::exec::net::ca_file(vars);
    let transport = match HttpTransport::with_options(
        &bases,
        &a.path,
        std::time::Duration::from_secs(60),
        ca_file.as_deref(),
    ) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return crate::cli::exit::EXIT_BAD_INPUT;
        }
    };
    let request_id = env("FAULTMATRIX_REQUEST_ID")
        .unwrap_or_else(|| crate::exec::run::request_id(&m.file, &row.name));
    let ctx = crate::exec::run::row_context(
        Arc::new(transport),
        &row.settings,
        request_id.clone(),
        SystemTime::now(),
    );
    let escalations = ctx.escalations.clone();
    let rt = match crate::exec::runtime::real_time_runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start a runtime: {e}");
            return crate::cli::exit::EXIT_BAD_INPUT;
        }
    };
    let result = rt.block_on(built.system.run(ctx));
    let esc: Vec<serde_json::Value> = escalations
        .events()
        .into_iter()
        .map(|e| serde_json::json!({"code": e.code, "to": e.to}))
        .collect();
    let (json, code) = match result {
        Ok(s) => (
            serde_json::json!({"outcome": "success", "route": s.route, "output": s.output, "escalations": esc}),
            crate::cli::exit::EXIT_OK,
        ),
        Err(e) => (
            serde_json::json!({
                "outcome": "error",
                "stop": e.stop,
                "code": e.code,
                "request_id": e.request_id,
                "attempts": e.attempts.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
                "escalations": esc,
            }),
            crate::cli::exit::EXIT_FAILED,
        ),
    };
    println!("{json}");
    code
}

/// The routes the file's `policy` declares, in order (`None` when it
/// declares none or does not parse). Read from the text with its rows
/// blanked when it is in the plain shape: parsing every row again to read
/// the policy made `--over-http`'s cost a row grow with the file (3.0 ms a
/// row in a 2,000-row file, 2.05 in a 100-row one).
fn declared_routes(m: &Matrix) -> Option<Vec<String>> {
    let header = crate::base::yaml::one_row::without_rows(&m.source);
    crate::base::yaml::parse_value(header.as_deref().unwrap_or(&m.source))
        .ok()
        .and_then(|v| v.get("policy").cloned())
        .and_then(|p| crate::load::policy::from_value(&p).ok())
        .map(|p| p.routes.into_iter().map(|r| r.name).collect())
}

/// Makes every reference-system matrix run over the wire
/// (`faultmatrix run --over-http`): the reference controller in this
/// process, its calls sent over real HTTP to each row's fixture server on
/// the real clock ([`crate::exec::wire::over_http`]). Nothing is spawned
/// per row, so a row costs the same whatever the size of its file.
pub fn over_http(m: &mut Matrix) {
    if let SystemUnderTest::InProcess { name, system } = &m.system {
        if name == "reference" {
            m.system = SystemUnderTest::OverHttp {
                name: name.clone(),
                system: system.clone(),
                routes: declared_routes(m),
            };
        }
    }
}

/// Makes every reference-system matrix run with this binary's `client`
/// subcommand as its command system (`exe`: the binary), each row in a
/// process of its own: what a matrix that names `faultmatrix client` as
/// its `system.command` does. Each row's process loads the whole file.
pub fn as_client_command(m: &mut Matrix, exe: &str) {
    if m.system_name() == "reference" {
        let routes = declared_routes(m);
        m.system = SystemUnderTest::Command(Arc::new(CommandSpec {
            argv: vec![exe.to_string(), "client".into()],
            env: Vec::new(),
            cwd: None,
            timeout: crate::model::command::DEFAULT_TIMEOUT,
            routes,
            clock: crate::model::command::Clock::Real,
            warm: false,
        }));
    }
}
