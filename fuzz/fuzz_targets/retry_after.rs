#![no_main]
//! `retry_after`: see `faultmatrix::exec::fuzz::retry_after`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultmatrix::exec::fuzz::retry_after(data));
