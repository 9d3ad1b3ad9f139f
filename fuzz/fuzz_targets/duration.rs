#![no_main]
//! `duration`: see `faultmatrix::exec::fuzz::duration`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultmatrix::exec::fuzz::duration(data));
