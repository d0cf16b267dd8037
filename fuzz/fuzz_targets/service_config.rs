#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| banco_fuzz::service_config::check(data));
