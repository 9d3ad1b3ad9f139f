//! The controller and its configuration.
//!
//! | piece | what it holds |
//! |---|---|
//! | [`config`] | [`Policy`](config::Policy), [`PolicyConfig`](config::PolicyConfig) and their parts |
//! | [`controller`] | the decision loop: retry, switch, stop, escalate |
//! | [`backoff`] | `initial * factor^retry`, capped, jitter none / full / equal / decorrelated |
//! | [`retry_after`] | `Retry-After` (seconds, three HTTP-date forms) and `retry-after-ms` |

pub mod backoff;
pub mod config;
pub mod controller;
pub mod retry_after;

pub use config::RouteConfig;
