//! Scenario TOML on arbitrary text: a scenario (its jobs built once) or an error, never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = elevator_sim::scenario::Scenario::parse(text, "fuzz.toml", None);
    }
});
