//! One command-system row over the wire, on the clock its spec names.

use super::{command, said, vclock, CommandSpec};
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

/// The program a command system's spec names, its `${VAR}`s expanded
/// (`None` when they cannot be).
pub fn program(spec: &CommandSpec, env: &Env) -> Option<String> {
    command::expand(spec.argv.first()?, env).ok()
}
