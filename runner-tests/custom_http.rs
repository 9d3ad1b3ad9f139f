//! The custom-system guide's HTTP example (docs/custom-system.md): a client
//! built on reqwest-middleware + reqwest-retry, unchanged, run in-process
//! on the virtual clock by the rows of `docs/examples/custom-http/*.yaml`.
//!
//! `cargo test --test custom_http` runs those rows as named tests.

#[path = "clients/middleware_client.rs"]
mod middleware_client;

use faultmatrix::http::HttpSystem;
use faultmatrix::Harness;

fn main() -> std::process::ExitCode {
    let client = HttpSystem::with_policy(["A"], |settings: &middleware_client::Settings, row| {
        let settings = settings.clone();
        async move { middleware_client::fetch(&row.base_url("A"), &settings).await }
    });
    Harness::new("docs/examples/custom-http")
        .system("models-client", client.factory())
        .run()
}
