//! Contracts between the harness and the code under test: the transport a
//! system calls ([`transport`], from the controller crate) and the
//! [`System`](system::System) trait a team implements with what a row
//! hands it.

pub mod system;
pub mod transport;
