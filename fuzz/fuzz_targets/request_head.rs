#![no_main]
//! `request_head`: see `faultmatrix::exec::fuzz::request_head`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultmatrix::exec::fuzz::request_head(data));
