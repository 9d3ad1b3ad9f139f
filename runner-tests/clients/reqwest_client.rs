//! The reqwest client of `reqwest_policy.rs` as a command system: base URLs
//! from `FAULTMATRIX_ROUTES` (`A=http://…,B=http://…`), the request id from
//! `FAULTMATRIX_REQUEST_ID`, `FM_WRONG` to make it wrong. Run over the wire
//! by `runner-tests/wire/reqwest/*.yaml`.
//!
//! Prints one JSON line: `{"outcome": "success"|"error", "stop": ..., "code": ...}`.

#[path = "reqwest_policy.rs"]
mod reqwest_policy;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let wrong = std::env::var("FM_WRONG").unwrap_or_default();
    let routes: Vec<(String, String)> = std::env::var("FAULTMATRIX_ROUTES")
        .unwrap_or_default()
        .split(',')
        .filter_map(|p| p.split_once('='))
        .map(|(r, u)| (r.to_string(), u.to_string()))
        .collect();
    let request_id = std::env::var("FAULTMATRIX_REQUEST_ID").unwrap_or_else(|_| "req-local".into());
    let client = reqwest_policy::client();
    match reqwest_policy::run(&client, &routes, &request_id, &wrong).await {
        Ok(route) => println!(r#"{{"outcome":"success","route":"{route}"}}"#),
        Err(e) => {
            let code = e.code.map_or("null".to_string(), |c| format!("\"{c}\""));
            let attempts: Vec<String> = e.attempts.iter().map(|a| format!("\"{a}\"")).collect();
            println!(
                r#"{{"outcome":"error","stop":"{}","code":{code},"request_id":"{request_id}","attempts":[{}]}}"#,
                e.stop,
                attempts.join(",")
            );
            std::process::exit(1);
        }
    }
}
