#![no_main]
// Written by the range work.
libfuzzer_sys::fuzz_target!(|_data: &[u8]| {});
