#![no_main]
//! `tape`: see `faultmatrix::exec::fuzz::tape`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultmatrix::exec::fuzz::tape(data));
