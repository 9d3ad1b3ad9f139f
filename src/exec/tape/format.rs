//! The tape file format (version 1): serde shapes, the content digest, and
//! reading and writing tapes.
//!
//! A tape is YAML:
//!
//! ```yaml
//! # Recorded by faultmatrix. Never edit by hand: record it again (docs/tapes.md).
//! version: 1
//! digest: sha256:3f1c...
//! interactions:
//!   - request:
//!       route: A
//!       model: gpt-4o
//!       stream: false
//!       routing: { provider: { order: [openai] } }
//!       summary:
//!         method: POST
//!         path: /v1/chat/completions
//!         headers:
//!           - authorization: "[scrubbed]"
//!         body: '{"model":"gpt-4o",...}'
//!     response:
//!       status: 429
//!       headers:
//!         - retry-after: "1"
//!       body: '{"error":{"code":"rate_limit_exceeded"}}'
//! ```
//!
//! The match fields of a request are `route` (the host), `model`, `stream`
//! and `routing`; `summary` is for reviewers only. A response is a `status`
//! with `headers` and either a `body` or a `stream` (events, comments, and
//! whether the connection broke), or a `fault` (`timeout`, `reset`,
//! `malformed`). The digest covers `version` and `interactions` in a
//! canonical JSON form, so comments and formatting may change but content
//! may not.

use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The tape format version this build writes and reads.
pub const VERSION: u32 = 1;

/// The first line of every written tape.
pub const HEADER: &str =
    "# Recorded by faultmatrix. Never edit by hand: record it again (see docs/tapes.md).\n";

/// A tape: ordered interactions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tape {
    /// Format version.
    pub version: u32,
    /// `sha256:<hex>` of the content.
    pub digest: String,
    /// Interactions in the order they happened.
    pub interactions: Vec<Interaction>,
}

/// One recorded exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interaction {
    /// What was sent.
    pub request: TapeRequest,
    /// What came back.
    pub response: TapeResponse,
}

/// The request side: match fields plus a scrubbed summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapeRequest {
    /// The route (upstream host) the call went to.
    pub route: String,
    /// Model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether a stream was asked for.
    #[serde(default)]
    pub stream: bool,
    /// The routing block (for example a `provider` pin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<serde_json::Value>,
    /// What was sent on the wire, scrubbed (not matched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
}

/// A scrubbed summary of a request as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// HTTP method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Headers sent, scrubbed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    /// Body sent, scrubbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// The response side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapeResponse {
    /// HTTP status (absent for a fault).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `timeout`, `reset` or `malformed`: no HTTP response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Response headers, in order, scrubbed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    /// The body, scrubbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// A server-sent-event stream, scrubbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<TapeStream>,
}

/// A transport fault instead of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fault {
    /// No answer in time.
    Timeout,
    /// Connection reset before a response.
    Reset,
    /// Not parseable as HTTP.
    Malformed,
}

impl Fault {
    /// The token in traces and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Reset => "reset",
            Self::Malformed => "malformed",
        }
    }
}

/// A recorded event stream.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapeStream {
    /// Items in order: comments and events.
    pub events: Vec<TapeEvent>,
    /// Whether the connection broke after the items.
    #[serde(default, rename = "break", skip_serializing_if = "is_false")]
    pub breaks: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One stream item: a comment (`: keep-alive`) or an event.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapeEvent {
    /// Comment text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// `event:` field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// `data:` field (lines joined with `\n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// `id:` field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A header, written as a one-entry map (`- retry-after: "1"`) so order and
/// repeats survive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header(pub String, pub String);

impl Serialize for Header {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(&self.0, &self.1)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for Header {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Header;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a header as a one-entry map such as `retry-after: \"1\"`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Header, A::Error> {
                let Some((k, v)) = a.next_entry::<String, String>()? else {
                    return Err(de::Error::custom("empty header"));
                };
                if a.next_key::<String>()?.is_some() {
                    return Err(de::Error::custom(
                        "a header entry holds exactly one `name: value`",
                    ));
                }
                Ok(Header(k, v))
            }
        }
        d.deserialize_map(V)
    }
}

/// Why a tape cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TapeError {
    /// What went wrong.
    pub kind: TapeErrorKind,
    /// The tape, as shown to the user.
    pub file: String,
    /// Details.
    pub message: String,
}

/// The kinds of tape errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapeErrorKind {
    /// The file does not exist.
    Missing,
    /// It cannot be read or parsed.
    Invalid,
    /// Its version is not supported.
    Version,
    /// Its digest does not match its content.
    Edited,
}

impl fmt::Display for TapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TapeError {}

#[derive(Serialize)]
struct Content<'a> {
    version: u32,
    interactions: &'a [Interaction],
}

/// `sha256:<hex>` over the canonical JSON of `version` and `interactions`.
pub fn digest(version: u32, interactions: &[Interaction]) -> String {
    let json = serde_json::to_vec(&Content {
        version,
        interactions,
    })
    .expect("tape content serializes to JSON");
    let hash = Sha256::digest(&json);
    let mut out = String::from("sha256:");
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

impl Tape {
    /// A tape of these interactions, with its digest.
    pub fn new(interactions: Vec<Interaction>) -> Self {
        let digest = digest(VERSION, &interactions);
        Self {
            version: VERSION,
            digest,
            interactions,
        }
    }

    /// The tape as file text (header comment, then YAML).
    pub fn to_text(&self) -> String {
        let yaml = crate::base::yaml::to_string(self).expect("a tape serializes to YAML");
        format!("{HEADER}{yaml}")
    }

    /// Parses and checks tape text: version, then digest.
    pub fn from_text(file: &str, text: &str) -> Result<Self, TapeError> {
        let invalid = |message: String| TapeError {
            kind: TapeErrorKind::Invalid,
            file: file.to_string(),
            message,
        };
        // Version first, so a future format gets a clear message rather
        // than a complaint about its unknown keys.
        let value = crate::base::yaml::parse_value(text).map_err(|e| {
            invalid(format!(
                "tape {file}{} is not valid YAML: {}",
                at(e.pos),
                e.message
            ))
        })?;
        match value.get("version").map(|v| v.as_u64()) {
            Some(Some(v)) if v == VERSION as u64 => {}
            Some(Some(v)) => {
                return Err(TapeError {
                    kind: TapeErrorKind::Version,
                    file: file.to_string(),
                    message: format!(
                        "tape {file} has version {v}, but this faultmatrix reads tape version {VERSION}: record it again with this version (see docs/tapes.md)"
                    ),
                })
            }
            _ => {
                return Err(invalid(format!(
                    "tape {file} has no `version: {VERSION}` line: it is not a faultmatrix tape"
                )))
            }
        }
        let tape: Tape = crate::base::yaml::from_str(text).map_err(|e| {
            invalid(format!(
                "tape {file}{} does not have the tape shape: {}",
                at(e.pos),
                e.message
            ))
        })?;
        let want = digest(tape.version, &tape.interactions);
        if want != tape.digest {
            return Err(TapeError {
                kind: TapeErrorKind::Edited,
                file: file.to_string(),
                message: format!(
                    "tape {file} was changed after it was recorded (its digest does not match its content): a tape is never edited by hand; record it again with `FAULTMATRIX_RECORD=1 cargo test` or `faultmatrix record` (see docs/tapes.md)"
                ),
            });
        }
        for (i, it) in tape.interactions.iter().enumerate() {
            let r = &it.response;
            if r.status.is_some() == r.fault.is_some() {
                return Err(invalid(format!(
                    "tape {file}: interaction {} has {}: a response has a `status` or a `fault`",
                    i + 1,
                    if r.status.is_some() {
                        "both `status` and `fault`"
                    } else {
                        "neither `status` nor `fault`"
                    }
                )));
            }
            if let Some(status) = r.status.filter(|s| !(100..=599).contains(s)) {
                return Err(invalid(format!(
                    "tape {file}: interaction {} has status {status}, which is not an HTTP status: expected 100 to 599, as in a matrix",
                    i + 1
                )));
            }
        }
        Ok(tape)
    }

    /// Reads a tape from disk. A missing file is [`TapeErrorKind::Missing`].
    pub fn read(path: &Path, file: &str) -> Result<Self, TapeError> {
        use crate::base::confine::{read_text, ReadError, MAX_FILE_BYTES};
        match read_text(path, MAX_FILE_BYTES) {
            Ok(text) => Self::from_text(file, &text),
            Err(ReadError::Missing) => Err(TapeError {
                kind: TapeErrorKind::Missing,
                file: file.to_string(),
                message: format!(
                    "tape {file} does not exist: record it with `FAULTMATRIX_RECORD=1 cargo test` or `faultmatrix record` (see docs/tapes.md); a missing tape fails, it never skips"
                ),
            }),
            Err(e) => Err(TapeError {
                kind: TapeErrorKind::Invalid,
                file: file.to_string(),
                message: format!("tape {file} cannot be read: {e}"),
            }),
        }
    }
}

fn at(pos: Option<crate::base::yaml::Pos>) -> String {
    pos.map(|p| format!(":{}:{}", p.line, p.col))
        .unwrap_or_default()
}

/// One line describing a response: `429`, `200 stream`, `200 stream break`,
/// `reset`.
pub fn response_label(r: &TapeResponse) -> String {
    match (r.fault, r.status, &r.stream) {
        (Some(f), _, _) => f.as_str().to_string(),
        (None, Some(s), Some(st)) if st.breaks => format!("{s} stream break"),
        (None, Some(s), Some(_)) => format!("{s} stream"),
        (None, Some(s), None) => s.to_string(),
        (None, None, _) => "?".to_string(),
    }
}

/// The outcome token the trace would show for a response (`429`, `reset`,
/// `broken`).
pub fn outcome_token(r: &TapeResponse) -> String {
    match (r.fault, r.status, &r.stream) {
        (Some(f), _, _) => f.as_str().to_string(),
        (None, _, Some(st)) if st.breaks => "broken".to_string(),
        (None, Some(s), _) => s.to_string(),
        (None, None, _) => "?".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Tape {
        Tape::new(vec![Interaction {
            request: TapeRequest {
                route: "A".into(),
                model: Some("m".into()),
                stream: true,
                routing: Some(serde_json::json!({"provider": {"order": ["x"]}})),
                summary: None,
            },
            response: TapeResponse {
                status: Some(200),
                fault: None,
                headers: vec![Header("content-type".into(), "text/event-stream".into())],
                body: None,
                stream: Some(TapeStream {
                    events: vec![
                        TapeEvent {
                            comment: Some("keep-alive".into()),
                            ..TapeEvent::default()
                        },
                        TapeEvent {
                            data: Some("{\"x\":1}".into()),
                            ..TapeEvent::default()
                        },
                    ],
                    breaks: true,
                }),
            },
        }])
    }

    #[test]
    fn round_trips_through_text() {
        let t = sample();
        let text = t.to_text();
        assert!(text.starts_with(HEADER));
        assert!(text.contains("- content-type: text/event-stream"), "{text}");
        assert!(text.contains("break: true"), "{text}");
        assert_eq!(Tape::from_text("t.yaml", &text).unwrap(), t);
    }

    #[test]
    fn an_edited_tape_is_rejected() {
        let text = sample().to_text().replace("status: 200", "status: 201");
        let e = Tape::from_text("t.yaml", &text).unwrap_err();
        assert_eq!(e.kind, TapeErrorKind::Edited);
        assert!(e.message.contains("never edited by hand"), "{e}");
        assert!(e.message.contains("record it again"), "{e}");
    }

    #[test]
    fn statuses_a_matrix_refuses_are_refused_in_a_tape_too() {
        for status in [0u16, 99, 600, 999] {
            let mut t = sample();
            t.interactions[0].response.status = Some(status);
            // Re-digested, as a hand edit with the digest recomputed would be.
            let t = Tape::new(t.interactions);
            let e = Tape::from_text("t.yaml", &t.to_text()).unwrap_err();
            assert_eq!(e.kind, TapeErrorKind::Invalid, "{status}");
            assert!(
                e.message
                    .contains(&format!("interaction 1 has status {status}")),
                "{e}"
            );
        }
    }

    #[test]
    fn comments_and_layout_are_not_content() {
        let text = sample().to_text().replace(HEADER, "# reviewed by QA\n");
        assert!(Tape::from_text("t.yaml", &text).is_ok());
    }

    #[test]
    fn another_version_is_named() {
        let text = sample().to_text().replace("version: 1", "version: 2");
        let e = Tape::from_text("t.yaml", &text).unwrap_err();
        assert_eq!(e.kind, TapeErrorKind::Version);
        assert!(e.message.contains("version 2"), "{e}");
    }

    #[test]
    fn a_missing_tape_fails_rather_than_skips() {
        let e = Tape::read(Path::new("/nonexistent/t.yaml"), "t.yaml").unwrap_err();
        assert_eq!(e.kind, TapeErrorKind::Missing);
        assert!(e.message.contains("never skips"), "{e}");
    }
}
