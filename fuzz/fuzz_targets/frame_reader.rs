//! Fuzz target: arbitrary bytes on a server's stdout through lspc's frame reader and decoder.
//! Invariant checked: no panic, no unbounded loop (every call consumes input or ends), and a
//! framing error ends the stream (as the reader thread does).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lspc::transport::{decode, FrameReader};

fuzz_target!(|data: &[u8]| {
    let mut reader = FrameReader::new(std::io::Cursor::new(data));
    // Each frame needs at least a header line, so there are fewer frames than bytes.
    for _ in 0..=data.len() {
        match reader.read_frame() {
            Ok(Some(body)) => {
                let _ = decode(&body);
            }
            Ok(None) | Err(_) => break,
        }
    }
});
