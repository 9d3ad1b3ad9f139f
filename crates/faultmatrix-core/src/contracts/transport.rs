//! The wire as a system under test sees it: the controller crate's
//! [`Transport`] contract, re-exported (see
//! [`faultmatrix_controller::transport`]).

pub use faultmatrix_controller::transport::*;
