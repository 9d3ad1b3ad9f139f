#![no_main]
//! `registry`: see `faultmatrix::exec::fuzz::registry`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultmatrix::exec::fuzz::registry(data));
