//! Over the wire: the same scripts served over HTTP/1.1 on 127.0.0.1, and
//! systems run as commands in any language, for clients whose transport
//! cannot be swapped (the openai SDK in a Python service, reqwest with a
//! base URL in a Rust one).
//!
//! | piece | module |
//! |---|---|
//! | HTTP/1.1 codec (requests, responses, chunked, SSE) | [`http`] |
//! | the fixture server, one listener per route per row | [`server`] |
//! | command systems, the row runner over the wire | [`command`] |
//! | the row's virtual clock shared with the client process (clock shims) | [`vclock`] |
//! | a real-HTTP [`crate::contracts::transport::Transport`] | [`client`] |
//! | `faultmatrix serve` and `faultmatrix client` | [`cli`] |
//!
//! In-process virtual time stays the default and the exact mode; over the
//! wire is the reach mode. See `docs/over-the-wire.md`.

pub mod client;
pub mod command;
pub mod http;
pub mod server;
pub mod vclock;
pub mod warm;

pub use command::CommandSpec;
pub use server::FixtureServer;
