//! Runs the same three-call row N times, one of three ways, and checks
//! every run (a row that did not produce its trace aborts the benchmark):
//!
//! - `seam N`: a reqwest client in-process through faultmatrix's HTTP seam
//!   (`faultmatrix::http::HttpSystem`), loaded once, run and judged N times;
//! - `reference N`: the same row against faultmatrix's reference system;
//! - `wiremock N`: the wiremock-rs way: per row two `MockServer`s (routes A
//!   and B), mocks mounted for 503, 503 on A and 200 on B, the same reqwest
//!   client and retry loop with zero backoff, on the real clock.
//!
//! The row: `A: [503, 503], B: [200]`, trace `A1 503 retry, A2 503 switch,
//! B1 200 return`. `bench/seam.sh` counts instructions per row with
//! callgrind (issue 11; issue 15 reuses the wiremock peer).

use std::time::Duration;

use faultmatrix::http::{HttpRow, HttpSystem};

/// The client: up to two calls per route, in order, no backoff; a 2xx ends
/// it. The same code for the seam and the wiremock way.
async fn client_loop(
    client: &reqwest::Client,
    routes: &[(&str, String)],
) -> Result<String, String> {
    for (route, base) in routes {
        for _ in 0..2 {
            let resp = client
                .post(format!("{base}/v1/chat/completions"))
                .body(r#"{"model":"m"}"#)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if resp.status().is_success() {
                resp.text().await.map_err(|e| e.to_string())?;
                return Ok(route.to_string());
            }
        }
    }
    Err("exhausted".into())
}

const ROW: &str = "title: bench
system: SYSTEM
rows:
  - name: two 503s on A then B
    inject: { A: [503, 503], B: [200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry
        A2 503 UPSTREAM_UNAVAILABLE switch
        B1 200 return
";

const REFERENCE: &str = "title: bench
policy:
  routes: [{ name: A, attempts: 2 }, { name: B, attempts: 2 }]
  backoff: { initial: 0s }
rows:
  - name: two 503s on A then B
    inject: { A: [503, 503], B: [200] }
    expect:
      trace: |
        A1 503 UPSTREAM_UNAVAILABLE retry
        A2 503 UPSTREAM_UNAVAILABLE switch
        B1 200 return
";

fn run_matrix(text: &str, systems: &faultmatrix::Systems, n: usize) {
    let m = faultmatrix::load_text("bench.yaml", text, None, systems)
        .unwrap_or_else(|e| panic!("the bench row does not load:\n{e}"));
    let opts = faultmatrix::RunOptions::default();
    for _ in 0..n {
        if let Err(f) = faultmatrix::run_row(&m, &m.rows[0], &opts).0 {
            panic!("the bench row failed:\n{}", f.render());
        }
    }
}

fn seam(n: usize) {
    let client = HttpSystem::new(["A", "B"], |row: HttpRow| async move {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| e.to_string())?;
        client_loop(&http, &[("A", row.base_url("A")), ("B", row.base_url("B"))]).await
    });
    let mut systems = faultmatrix::Systems::new();
    systems.register("loop", client.factory());
    run_matrix(&ROW.replace("SYSTEM", "loop"), &systems, n);
}

fn reference(n: usize) {
    run_matrix(REFERENCE, &faultmatrix::Systems::new(), n);
}

async fn wiremock_row() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let a = MockServer::start().await;
    let b = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .expect(2)
        .mount(&a)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string(r#"{"ok":true}"#))
        .expect(1)
        .mount(&b)
        .await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("a plain-HTTP client builds");
    let got = client_loop(&http, &[("A", a.uri()), ("B", b.uri())]).await;
    assert_eq!(got.as_deref(), Ok("B"), "the wiremock row did not end on B");
    // Dropping the servers verifies the `expect` counts (it panics otherwise).
    drop(a);
    drop(b);
}

fn wiremock(n: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime builds");
    for _ in 0..n {
        rt.block_on(wiremock_row());
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let t0 = std::time::Instant::now();
    match args.first().map(String::as_str) {
        Some("seam") => seam(n),
        Some("reference") => reference(n),
        Some("wiremock") => wiremock(n),
        _ => {
            eprintln!("usage: faultmatrix-bench-peer seam|reference|wiremock N");
            std::process::exit(2);
        }
    }
    let per = t0.elapsed() / n.max(1) as u32;
    eprintln!("{} rows: {:?} per row (wall)", n, per);
}
