//! Execution: running a row and observing it. The scripted upstream and
//! transport, the in-process driver on a paused clock, tape replay and
//! recording, the fixture server and command systems over the wire, and
//! the observed trace.

pub mod fuzz;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "record")]
pub mod net;
pub mod observation;
pub mod run;
pub mod runtime;
pub mod scripted;
pub mod tape;
pub mod trace;
pub mod upstream;
pub mod wire;
