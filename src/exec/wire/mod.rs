//! Over the wire: the same scripts served over HTTP/1.1 on 127.0.0.1, and
//! systems run as commands in any language, for clients whose transport
//! cannot be swapped (the openai SDK in a Python service, reqwest with a
//! base URL in a Rust one).
//!
//! | piece | module |
//! |---|---|
//! | HTTP/1.1 codec (requests, responses, chunked, SSE) | [`http`] |
//! | the fixture server, one listener per route per row | [`server`] |
//! | what a command printed, and how to run it by hand | [`said`] |
//! | command systems, the row runner over the wire | [`command`] |
//! | the row's virtual clock shared with the client process (clock shims) | [`vclock`] |
//! | warm Python parents, spare Node processes | [`warm`], [`spare`] |
//! | a real-HTTP [`crate::contracts::transport::Transport`] | [`client`] |
//! | an in-process system over real HTTP (`run --over-http`) | [`over_http`] |
//! | `faultmatrix serve` and `faultmatrix client` | [`cli`] |
//! | one command row, on its virtual or real clock | `row` |
//! | why rows over the wire cannot run in this build (`UNAVAILABLE`) | `unavailable` |
//!
//! In-process virtual time stays the default and the exact mode; over the
//! wire is the reach mode. See `docs/over-the-wire.md`.
//!
//! All but the codec are the `wire` feature (on by default; `--over-http`
//! and the real-HTTP client also need `record`). Without it ([`off`]) a
//! command row is a row that cannot run here: the harness ignores it, and
//! fails it under CI, naming the feature; the codec stays for the
//! in-process HTTP seam and the fuzz targets.

#[cfg(feature = "record")]
pub mod client;
#[cfg(feature = "wire")]
pub mod command;
pub mod http;
#[cfg(feature = "record")]
pub mod over_http;
#[cfg(feature = "wire")]
pub mod said;
#[cfg(feature = "wire")]
pub mod server;
#[cfg(feature = "wire")]
pub mod spare;
#[cfg(feature = "wire")]
pub mod vclock;
#[cfg(feature = "wire")]
pub mod warm;

#[cfg(not(feature = "record"))]
pub mod off;
#[cfg(not(feature = "record"))]
pub use off::over_http;
#[cfg(not(feature = "wire"))]
pub use off::{program, run_row};

#[cfg(feature = "wire")]
mod row;
#[cfg(feature = "wire")]
pub use command::CommandSpec;
// Only the in-process system over HTTP takes it from here (`record`).
#[cfg(feature = "record")]
pub(crate) use row::real_time_alone;
#[cfg(feature = "wire")]
pub use row::{program, run_row};
#[cfg(feature = "wire")]
pub use server::FixtureServer;

mod unavailable;
pub use unavailable::UNAVAILABLE;
