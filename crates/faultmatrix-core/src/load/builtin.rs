//! The built-in registry's fixtures as Rust data.
//!
//! `src/model/builtin-fixtures.yaml` is their readable form: the registry
//! keeps it as its `source`, and each fixture's line here is its line
//! there. Building
//! the fixtures from this table instead of parsing that text at every
//! process start is what a test process pays for them: under nextest every
//! test is a process, and parsing the 3 KB of YAML took 5.1 M of a
//! one-test process's 12.9 M instructions (debug profile). The test
//! `the_table_is_the_yaml` in [`super::registry`] holds the two equal, fixture by
//! fixture (entries, `recovers_after`, lines), and fails naming the code
//! that differs: change both together.

use std::time::Duration;

use faultmatrix_controller::transport::SseItem;

use crate::model::script::{Answer, Entry, Repeat, ScriptedResponse, StreamSpec};

/// What a built-in fixture answers.
enum Spec {
    /// A response: status, headers, JSON body (keys sorted, as the loader
    /// writes a body).
    Status(u16, &'static [(&'static str, &'static str)], &'static str),
    /// A fault (`fault: timeout` and so on).
    Fault(fn() -> Answer),
    /// A `200` stream of these comments that breaks after them.
    BrokenStream(&'static [&'static str]),
}

/// Each built-in fixture, in the YAML's order: code, the line its name is
/// on in the YAML, answer, `recovers_after`.
const TABLE: &[(&str, usize, Spec, Option<u32>)] = &[
    (
        "RATE_LIMITED",
        8,
        Spec::Status(
            429,
            &[("Retry-After", "2")],
            r#"{"error":{"code":"rate_limit_exceeded","message":"Rate limit reached"}}"#,
        ),
        Some(2),
    ),
    (
        "OVERLOADED",
        13,
        Spec::Status(
            529,
            &[],
            r#"{"error":{"message":"Overloaded","type":"overloaded_error"}}"#,
        ),
        Some(1),
    ),
    (
        "UPSTREAM_UNAVAILABLE",
        17,
        Spec::Status(
            503,
            &[],
            r#"{"error":{"code":"service_unavailable","message":"Service unavailable"}}"#,
        ),
        Some(2),
    ),
    (
        "GATEWAY_TIMEOUT",
        21,
        Spec::Status(
            504,
            &[],
            r#"{"error":{"code":"gateway_timeout","message":"Gateway timeout"}}"#,
        ),
        Some(2),
    ),
    (
        "BAD_GATEWAY",
        25,
        Spec::Status(
            502,
            &[],
            r#"{"error":{"code":"bad_gateway","message":"Bad gateway"}}"#,
        ),
        Some(1),
    ),
    (
        "SERVER_ERROR",
        29,
        Spec::Status(
            500,
            &[],
            r#"{"error":{"message":"Internal server error","type":"api_error"}}"#,
        ),
        Some(1),
    ),
    (
        "REQUEST_TIMEOUT",
        33,
        Spec::Status(
            408,
            &[],
            r#"{"error":{"code":"request_timeout","message":"Request timed out"}}"#,
        ),
        Some(1),
    ),
    ("TIMEOUT", 37, Spec::Fault(|| Answer::Timeout), Some(1)),
    (
        "CONNECTION_RESET",
        38,
        Spec::Fault(|| Answer::Reset),
        Some(1),
    ),
    (
        "CONNECTION_REFUSED",
        39,
        Spec::Fault(|| Answer::Refused),
        Some(1),
    ),
    (
        "MALFORMED_RESPONSE",
        40,
        Spec::Fault(|| Answer::Malformed),
        Some(1),
    ),
    (
        "STREAM_BROKEN",
        41,
        Spec::BrokenStream(&["keep-alive"]),
        Some(1),
    ),
    (
        "MODEL_UNAVAILABLE",
        45,
        Spec::Status(
            404,
            &[],
            r#"{"error":{"code":"model_not_found","message":"The model does not exist or is unavailable"}}"#,
        ),
        None,
    ),
    (
        "INVALID_REQUEST",
        48,
        Spec::Status(
            400,
            &[],
            r#"{"error":{"code":"invalid_request","message":"Invalid request","type":"invalid_request_error"}}"#,
        ),
        None,
    ),
    (
        "INVALID_INPUT",
        51,
        Spec::Status(
            422,
            &[],
            r#"{"error":{"code":"invalid_input","message":"Invalid input"}}"#,
        ),
        None,
    ),
    (
        "CONTEXT_LENGTH_EXCEEDED",
        54,
        Spec::Status(
            400,
            &[],
            r#"{"error":{"code":"context_length_exceeded","message":"Maximum context length exceeded"}}"#,
        ),
        None,
    ),
    (
        "CONTENT_FILTERED",
        57,
        Spec::Status(
            400,
            &[],
            r#"{"error":{"code":"content_policy_violation","message":"Content filtered"}}"#,
        ),
        None,
    ),
    (
        "AUTH_FAILED",
        60,
        Spec::Status(
            401,
            &[],
            r#"{"error":{"code":"invalid_api_key","message":"Incorrect API key provided"}}"#,
        ),
        None,
    ),
    (
        "PERMISSION_DENIED",
        63,
        Spec::Status(
            403,
            &[],
            r#"{"error":{"message":"Permission denied","type":"permission_error"}}"#,
        ),
        None,
    ),
    (
        "QUOTA_EXHAUSTED",
        66,
        Spec::Status(
            429,
            &[],
            r#"{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}"#,
        ),
        None,
    ),
    (
        "NOT_FOUND",
        69,
        Spec::Status(
            404,
            &[],
            r#"{"error":{"code":"not_found","message":"Unknown path"}}"#,
        ),
        None,
    ),
    (
        "CONFLICT",
        72,
        Spec::Status(
            409,
            &[],
            r#"{"error":{"code":"conflict","message":"Conflict"}}"#,
        ),
        None,
    ),
    (
        "CLIENT_ERROR",
        75,
        Spec::Status(
            418,
            &[],
            r#"{"error":{"code":"client_error","message":"Client error"}}"#,
        ),
        None,
    ),
];

/// The built-in fixtures, in the YAML's order: code, line, entry
/// (labelled with the code, as a fixture's entry is), `recovers_after`.
pub(super) fn fixtures() -> impl Iterator<Item = (&'static str, usize, Entry, Option<u32>)> {
    TABLE.iter().map(|(name, line, spec, recovers)| {
        let answer = match spec {
            Spec::Status(status, headers, body) => Answer::Response(ScriptedResponse {
                status: *status,
                headers: headers
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                    .collect(),
                body: Some((*body).to_string()),
                stream: None,
                dates: Vec::new(),
            }),
            Spec::Fault(answer) => answer(),
            Spec::BrokenStream(comments) => Answer::Response(ScriptedResponse {
                status: 200,
                headers: Vec::new(),
                body: None,
                stream: Some(StreamSpec {
                    items: comments
                        .iter()
                        .map(|c| SseItem::Comment((*c).to_string()))
                        .collect(),
                    breaks: true,
                    pauses: Vec::new(),
                }),
                dates: Vec::new(),
            }),
        };
        let entry = Entry {
            answer,
            latency: Duration::ZERO,
            repeat: Repeat::Times(1),
            committed: false,
            label: (*name).to_string(),
        };
        (*name, *line, entry, *recovers)
    })
}
