//! The in-process HTTP seam (feature `http`): a row's scripts served as real
//! HTTP/1.1 on the row's own paused tokio runtime, so a reqwest or hyper
//! client runs unchanged, with its own timeouts and sleeps exact and
//! instant on the virtual clock.
//!
//! | piece | module |
//! |---|---|
//! | [`HttpRow`]: a base URL per route (loopback listener on the row's runtime), or an in-memory connection for a hyper connector | [`serve`] |
//! | [`HttpSystem`]: a system from "call my client"; the final error, its attempts and the escalation built from what was observed | [`system`] |
//!
//! Every call goes through the row's transport (the scripted upstream, or a
//! tape), so the trace, the runaway guard, "never called again" and the
//! request assertions see exactly what they see for any in-process system.
//! See `docs/custom-system.md` and, for why a loopback listener and not
//! only in-memory streams, `docs/design-notes.md`.

pub mod serve;
pub mod system;

pub use serve::{HttpRow, SeenCall, SeenOutcome};
pub use system::{HttpSystem, Seen};
