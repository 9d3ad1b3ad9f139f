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
//!
//! In-process virtual time stays the default and the exact mode; over the
//! wire is the reach mode. See `docs/over-the-wire.md`.

#[cfg(feature = "record")]
pub mod client;
pub mod command;
pub mod http;
#[cfg(feature = "record")]
pub mod over_http;
pub mod said;
pub mod server;
pub mod spare;
pub mod vclock;
pub mod warm;

pub use command::CommandSpec;
pub use server::FixtureServer;

use crate::base::env::Env;
use crate::exec::observation::Observation;
use crate::model::command::Clock;
use crate::model::{Matrix, Row};

/// Held shared by every virtual-clock command row of this process and
/// alone by each real-clock one (a real-clock command, or an in-process
/// system `--over-http`): a real-clock row measures its waits in real
/// time, and under `--test-threads 8` on two cores the other rows' client
/// processes delayed its client's timers by 100-160 ms (outside a 50 ms
/// tolerance). Virtual-clock rows do not care when they run.
static REAL_TIME_ALONE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Waits until no other command row of this process runs, and keeps them
/// waiting while the guard lives: for a row measured in real time.
pub(crate) fn real_time_alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    REAL_TIME_ALONE
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs one row of a command system on the clock its spec names: the
/// row's virtual clock through a clock shim ([`vclock`]), or the real clock
/// ([`command`]), each on a fresh current-thread runtime. A real-clock row
/// runs while no other command row of this process does.
pub fn run_row(matrix: &Matrix, row: &Row, spec: &CommandSpec, env: &Env) -> Observation {
    let mut obs = match spec.clock {
        Clock::Real => {
            let _alone = real_time_alone();
            command::run_row(matrix, row, spec, env)
        }
        Clock::Virtual => match crate::exec::runtime::real_time_runtime() {
            Ok(rt) => {
                let _shared = REAL_TIME_ALONE
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                rt.block_on(vclock::run_row(matrix, row, spec, env))
            }
            Err(e) => Observation::failed(
                crate::exec::observation::request_id(&matrix.file, &row.name),
                format!("cannot start a runtime for the clock and fixture server: {e}"),
            ),
        },
    };
    if let Some(said) = &mut obs.command {
        said.reproduce = said::reproduce(matrix, row, spec);
    }
    obs
}
