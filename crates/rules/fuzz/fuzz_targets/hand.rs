#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    banco_rules_fuzz::hand::check_hand(data);
});
