#![no_main]
//! `response`: see `faultmatrix::exec::fuzz::response`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultmatrix::exec::fuzz::response(data));
