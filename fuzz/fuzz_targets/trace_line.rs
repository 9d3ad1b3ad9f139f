#![no_main]
//! `trace_line`: see `faultmatrix::exec::fuzz::trace_line`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultmatrix::exec::fuzz::trace_line(data));
