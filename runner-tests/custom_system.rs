//! The custom-system guide's example (docs/custom-system.md), compiled and
//! run: a team's own async client, wrapped in a small adapter that
//! implements [`System`], registered with [`Harness::system`], and driven by
//! the rows of `docs/examples/custom/*.yaml`.
//!
//! `cargo test --test custom_system` runs those rows as named tests.

use std::sync::Arc;
use std::time::Duration;

use faultmatrix::system::{
    read_policy, AttemptNote, Built, Dur, Escalation, FinalError, Observed, Registry, RowContext,
    Success, SystemResult, Value, YamlError,
};
use faultmatrix::transport::{BoxFuture, Request, Transport};
use faultmatrix::{Harness, System};

// ---------------------------------------------------------------- the client
// The team's client, unchanged apart from its HTTP layer being a trait.

/// What the client needs from HTTP.
pub trait HttpSend: Send + Sync {
    /// Sends to a host; `Err` is a network failure.
    fn send(&self, host: &str, request_id: &str) -> BoxFuture<'static, Result<Reply, String>>;
}

/// An HTTP reply as the client sees it.
pub struct Reply {
    pub status: u16,
    pub retry_after: Option<u64>,
    pub body: String,
}

/// The client's settings.
#[derive(Clone)]
pub struct ChatConfig {
    pub attempts: u32,
    pub pause: Duration,
    pub timeout: Duration,
}

/// One failed attempt, as the client records it.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub host: String,
    pub number: u32,
    pub status: Option<u16>,
    pub body: String,
}

/// The client's error.
#[derive(Debug)]
pub struct ChatError {
    pub permanent: bool,
    pub attempts: Vec<Attempt>,
}

/// A chat client: retries the primary host on 429, 5xx and network
/// failures (pausing, or as long as Retry-After asks), then tries the backup
/// host once. Other 4xx answers fail at once.
pub struct ChatClient<H> {
    http: H,
    config: ChatConfig,
}

impl<H: HttpSend> ChatClient<H> {
    pub fn new(http: H, config: ChatConfig) -> Self {
        Self { http, config }
    }

    pub async fn complete(&self, request_id: &str) -> Result<String, ChatError> {
        let mut attempts = Vec::new();
        let plan = (1..=self.config.attempts)
            .map(|n| ("primary", n))
            .chain([("backup", 1)]);
        for (host, number) in plan {
            let call = self.http.send(host, request_id);
            let (status, retry_after, body) =
                match tokio::time::timeout(self.config.timeout, call).await {
                    Ok(Ok(r)) if r.status < 300 => return Ok(r.body),
                    Ok(Ok(r)) => (Some(r.status), r.retry_after, r.body),
                    Ok(Err(e)) => (None, None, e),
                    Err(_) => (None, None, "timeout".to_string()),
                };
            attempts.push(Attempt {
                host: host.to_string(),
                number,
                status,
                body,
            });
            let transient = status.is_none_or(|s| s == 429 || s >= 500);
            if !transient {
                return Err(ChatError {
                    permanent: true,
                    attempts,
                });
            }
            let last_primary = host == "primary" && number == self.config.attempts;
            if host == "primary" && !last_primary {
                let guided = Duration::from_secs(retry_after.unwrap_or(0));
                tokio::time::sleep(self.config.pause.max(guided)).await;
            }
        }
        Err(ChatError {
            permanent: false,
            attempts,
        })
    }
}

// ---------------------------------------------------------------- the adapter
// About forty lines: HTTP over the row's transport, results into faultmatrix's
// terms, and a factory that reads the matrix's `policy`.

/// The client's HTTP layer over the row's scripted transport.
struct RowHttp(Arc<dyn Transport>);

impl HttpSend for RowHttp {
    fn send(&self, host: &str, request_id: &str) -> BoxFuture<'static, Result<Reply, String>> {
        let call = self.0.call(Request {
            route: host.to_string(),
            request_id: Some(request_id.to_string()),
            size: 1000,
            ..Request::default()
        });
        Box::pin(async move {
            let r = call.await.map_err(|e| e.to_string())?;
            Ok(Reply {
                status: r.status,
                retry_after: r.header("retry-after").and_then(|v| v.parse().ok()),
                body: r.text().unwrap_or_default().to_string(),
            })
        })
    }
}

/// The client as a faultmatrix system.
struct ChatSystem {
    config: ChatConfig,
    registry: Arc<Registry>,
}

impl ChatSystem {
    /// The registry's code for an attempt (the trace uses the same codes).
    fn code(&self, a: &Attempt) -> String {
        let observed = match a.status {
            Some(status) => Observed::Response {
                status,
                body: Some(&a.body),
            },
            None if a.body == "timeout" => Observed::Timeout,
            None => Observed::Reset,
        };
        self.registry
            .classify(observed, &[])
            .map_or_else(|| "OK".to_string(), |c| c.code)
    }
}

impl System for ChatSystem {
    fn run(&self, ctx: RowContext) -> BoxFuture<'_, SystemResult> {
        Box::pin(async move {
            let client = ChatClient::new(RowHttp(ctx.transport.clone()), self.config.clone());
            match client.complete(&ctx.request_id).await {
                Ok(text) => Ok(Success {
                    route: None,
                    output: Some(text),
                }),
                Err(e) => {
                    let mut err = FinalError {
                        stop: if e.permanent { "terminal" } else { "exhausted" }.into(),
                        code: e.attempts.last().map(|a| self.code(a)),
                        request_id: Some(ctx.request_id.clone()),
                        attempts: Vec::new(),
                        omitted: 0,
                        output: None,
                    };
                    for a in &e.attempts {
                        err.push_attempt(AttemptNote {
                            route: a.host.clone(),
                            attempt: a.number,
                            code: self.code(a),
                        });
                    }
                    let code = err.code.clone().unwrap_or_default();
                    let to = self.registry.get(&code).and_then(|d| d.escalate_to.clone());
                    ctx.escalations.escalate(Escalation { code, to });
                    Err(err)
                }
            }
        })
    }
}

/// The `policy` block of a `system: chat-client` matrix.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChatConfig {
    attempts: u32,
    pause: Dur,
    #[serde(default)]
    timeout: Option<Dur>,
}

/// Builds the system from a matrix's `policy`; errors become diagnostics.
fn chat_client(policy: &Value, registry: &Arc<Registry>) -> Result<Built, Vec<YamlError>> {
    let raw: RawChatConfig = read_policy(policy)?;
    let config = ChatConfig {
        attempts: raw.attempts,
        pause: raw.pause.0,
        timeout: raw.timeout.map_or(Duration::from_secs(30), |d| d.0),
    };
    Ok(Built {
        system: Arc::new(ChatSystem {
            config,
            registry: registry.clone(),
        }),
        routes: Some(vec!["primary".into(), "backup".into()]),
        body_paths: Vec::new(),
        deadline: None,
    })
}

// ---------------------------------------------------------------- the harness

fn main() -> std::process::ExitCode {
    Harness::new("docs/examples/custom")
        .system("chat-client", Arc::new(chat_client))
        .run()
}
