#![no_main]
//! `matrix`: see `faultmatrix::exec::fuzz::matrix`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultmatrix::exec::fuzz::matrix(data));
