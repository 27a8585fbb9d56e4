//! The tracefs reader on hostile input: arbitrary bytes, and real kernel lines with a byte
//! changed anywhere, give events or an error naming the line, never a panic.

use std::io::Read;
use std::path::Path;

use elevator_workload::traces::ftrace::{FtraceReader, KernelTrace};
use elevator_workload::traces::lines::Lines;
use proptest::prelude::*;

fn read(bytes: Vec<u8>) -> Result<KernelTrace, elevator_workload::input::InputError> {
    KernelTrace::assemble(FtraceReader::new(Lines::from_bytes(bytes, "h.trace")), None)
}

/// The first lines of a corpus trace (events of every kind a request passes through).
fn kernel_lines() -> Vec<String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/kernel/readers-writers/mq-deadline/trace.txt.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .take(60)
        .map(str::to_string)
        .collect()
}

#[test]
fn every_byte_of_real_lines_changed_gives_an_event_or_an_error_on_that_line() {
    let lines = kernel_lines();
    assert!(read(lines.join("\n").into_bytes()).is_ok());
    for (n, line) in lines.iter().enumerate() {
        for at in 0..line.len() {
            for b in [
                b'x', b' ', b'9', b'[', b']', b',', b'+', b'(', b':', b'-', 0xff,
            ] {
                let mut bytes = line.clone().into_bytes();
                bytes[at] = b;
                match read(bytes) {
                    Ok(_) => {}
                    Err(e) => assert_eq!(e.line(), Some(1), "line {n}, byte {at} = {b}: {e}"),
                }
            }
            // Cut short there.
            let _ = read(line.as_bytes()[..at].to_vec());
        }
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = read(bytes);
    }

    #[test]
    fn shuffled_tokens_of_real_lines_never_panic(picks in proptest::collection::vec((0usize..60, 0usize..20), 1..30)) {
        let lines = kernel_lines();
        let tokens: Vec<Vec<&str>> = lines.iter().map(|l| l.split_whitespace().collect()).collect();
        let mut text = String::new();
        for (l, t) in picks {
            let toks = &tokens[l % tokens.len()];
            // A real line with its tokens from position t on rotated.
            let k = t % toks.len();
            let mut v: Vec<&str> = toks[k..].to_vec();
            v.extend_from_slice(&toks[..k]);
            text.push_str(&v.join(" "));
            text.push('\n');
        }
        let _ = read(text.into_bytes());
    }
}
