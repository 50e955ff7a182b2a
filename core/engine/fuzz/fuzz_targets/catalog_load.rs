#![no_main]
// Written by the catalog work.
libfuzzer_sys::fuzz_target!(|_data: &[u8]| {});
