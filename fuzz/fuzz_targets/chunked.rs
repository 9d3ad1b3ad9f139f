#![no_main]
//! `chunked`: see `faultmatrix::exec::fuzz::chunked`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultmatrix::exec::fuzz::chunked(data));
