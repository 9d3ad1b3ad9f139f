#![no_main]
//! `sse`: see `faultmatrix::exec::fuzz::sse`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultmatrix::exec::fuzz::sse(data));
