//! Request assertions: what a row says about the requests themselves, per
//! call, without capturing credentials or bodies.
//!
//! ```yaml
//! expect:
//!   requests:
//!     "*":  { headers: { idempotency-key: $same, x-stainless-retry-count: $retries }, model: gpt-4o-mini, stream: false }
//!     A1:   { method: POST, path: /v1/chat/completions }
//! ```
//!
//! Keys are call labels (`A1`, `B2`) or `"*"` for every call. A header's
//! expected value is a literal, or one of `$present`, `$absent`, `$same`
//! (present, and identical on every call the assertion covers) and
//! `$retries` (the number of calls made before this one). Credential
//! headers (`authorization`, `cookie`, `*api-key*`, `*token*`...) are never
//! recorded, so asserting on them is refused when the file loads.
//!
//! The checks run on call records, so they hold in-process too (there the
//! reference system sends `x-retry-count` and `idempotency-key`).

/// What a header must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderExpect {
    /// Exactly this value.
    Is(String),
    /// Present, any value.
    Present,
    /// Not sent.
    Absent,
    /// Present and identical on every covered call.
    Same,
    /// Equal to the number of calls made before this one.
    Retries,
}

/// Assertions on one call (or all calls).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestAssertion {
    /// `A1`, or `*` for every call.
    pub call: String,
    /// Header expectations, lower-case names.
    pub headers: Vec<(String, HeaderExpect)>,
    /// Expected model.
    pub model: Option<String>,
    /// Expected stream flag.
    pub stream: Option<bool>,
    /// Expected method.
    pub method: Option<String>,
    /// Expected path.
    pub path: Option<String>,
}
