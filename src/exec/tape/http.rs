//! One recorded call: sent through [`crate::exec::net`] (the one HTTP
//! client, `http://` and `https://`, bounded answers), and what it got as
//! a tape sees it. A `text/event-stream` body is parsed into items:
//! comments (`: keep-alive`) and events (`event:`, `data:`, `id:`), split
//! at blank lines; a connection that ends inside an event or short of its
//! body is a stream that broke part-way.
//!
//! [`send`] blocks on purpose: the recorder runs it on tokio's blocking
//! pool, which keeps a paused virtual clock from auto-advancing while the
//! real call is in flight (see `record.rs`).

use std::time::Duration;

use crate::exec::tape::format::Fault;
use crate::model::SseItem;

pub use crate::base::url::BaseUrl;

/// The CA file to trust besides the system's roots, from
/// `FAULTMATRIX_CA_FILE` (see [`crate::exec::net`]).
#[cfg(feature = "record")]
pub fn ca_file(env: &crate::base::env::Env) -> Option<std::path::PathBuf> {
    crate::exec::net::ca_file(env)
}

/// Without the `record` feature there is no client to trust anything.
#[cfg(not(feature = "record"))]
pub fn ca_file(_env: &crate::base::env::Env) -> Option<std::path::PathBuf> {
    None
}

/// What a recorded call got.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    /// An HTTP response.
    Response {
        /// Status.
        status: u16,
        /// Headers in order, names lowercased, hop-by-hop headers left out.
        headers: Vec<(String, String)>,
        /// The body.
        body: ReceivedBody,
    },
    /// No usable response.
    Fault(Fault),
}

/// A received body.
#[derive(Debug, Clone, PartialEq)]
pub enum ReceivedBody {
    /// Complete text.
    Full(String),
    /// An event stream.
    Stream {
        /// Items in order.
        items: Vec<SseItem>,
        /// Whether the connection broke part-way.
        breaks: bool,
    },
}

/// Headers that describe the connection, not the answer.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "date",
    "server",
];

/// Sends one request to `base` + `path` through [`crate::exec::net`]
/// (`http://` or `https://`; the system's roots plus the PEM certificates
/// in `ca_file`). `Err` means the upstream could not be reached at all, or
/// answered more than the recorder takes (a configuration problem or a
/// clear refusal, not an answer worth recording). Blocking: see the
/// module's docs.
#[cfg(feature = "record")]
pub fn send(
    base: &BaseUrl,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
    ca_file: Option<&std::path::Path>,
) -> Result<Received, String> {
    use crate::exec::net::{self, Failed};
    let client = net::client(timeout, ca_file)?;
    let url = format!("{}{path}", base.url);
    match net::send_blocking(&client, "POST", &url, headers, body.to_vec()) {
        Ok(a) => Ok(received(a.status, a.headers, &a.body, a.complete)),
        Err(Failed::Reset) => Ok(Received::Fault(Fault::Reset)),
        Err(Failed::Timeout) => Ok(Received::Fault(Fault::Timeout)),
        Err(Failed::Malformed) => Ok(Received::Fault(Fault::Malformed)),
        Err(e @ (Failed::Unreachable(_) | Failed::TooLarge(_))) => Err(e.to_string()),
    }
}

/// Without the `record` feature there is no client to record with.
#[cfg(not(feature = "record"))]
pub fn send(
    _base: &BaseUrl,
    _path: &str,
    _headers: &[(String, String)],
    _body: &[u8],
    _timeout: Duration,
    _ca_file: Option<&std::path::Path>,
) -> Result<Received, String> {
    Err("recording needs faultmatrix's `record` feature (the `cli` feature enables it)".into())
}

/// What an answer becomes on a tape: hop-by-hop headers left out, an event
/// stream parsed into items, a plain body cut short a reset.
pub fn received(
    status: u16,
    headers: Vec<(String, String)>,
    bytes: &[u8],
    complete: bool,
) -> Received {
    let sse = headers.iter().any(|(k, v)| {
        k == "content-type" && v.to_ascii_lowercase().starts_with("text/event-stream")
    });
    let headers: Vec<(String, String)> = headers
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .filter(|(k, _)| !HOP_BY_HOP.contains(&k.as_str()))
        .collect();
    let text = String::from_utf8_lossy(bytes).into_owned();
    // An error answer is read as a body even if it claims to be a stream.
    let sse = sse && (200..300).contains(&status);
    let body = if sse {
        let (items, partial) = crate::base::sse::parse(&text);
        ReceivedBody::Stream {
            items,
            breaks: partial || !complete,
        }
    } else {
        ReceivedBody::Full(text)
    };
    if !complete && !sse {
        // A plain body cut short: the client would see a broken response.
        return Received::Fault(Fault::Reset);
    }
    Received::Response {
        status,
        headers,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn answers_become_tape_responses() {
        assert_eq!(
            received(
                429,
                h(&[("retry-after", "1"), ("content-length", "2"), ("date", "x")]),
                b"{}",
                true
            ),
            Received::Response {
                status: 429,
                headers: h(&[("retry-after", "1")]),
                body: ReceivedBody::Full("{}".into())
            }
        );
        match received(
            200,
            h(&[("content-type", "text/event-stream")]),
            b": keep-alive\n",
            false,
        ) {
            Received::Response {
                body: ReceivedBody::Stream { items, breaks },
                ..
            } => {
                assert_eq!(items, vec![SseItem::Comment("keep-alive".into())]);
                assert!(breaks, "cut short: the stream broke");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            received(
                503,
                h(&[("content-type", "text/event-stream")]),
                b"{}",
                true
            ),
            Received::Response {
                status: 503,
                body: ReceivedBody::Full(_),
                ..
            }
        ));
        assert_eq!(
            received(200, Vec::new(), b"{\"a\"", false),
            Received::Fault(Fault::Reset)
        );
    }

    #[test]
    fn base_urls() {
        let b = BaseUrl::parse("http://127.0.0.1:9/v1/").unwrap();
        assert_eq!(b.url, "http://127.0.0.1:9/v1");
        let b = BaseUrl::parse("https://api.example.com").unwrap();
        assert_eq!(b.url, "https://api.example.com");
        assert!(BaseUrl::parse("ftp://x").is_err());
    }
}
