//! Decodes the large reply of `decode_reply` a fixed number of times with the lenient reader
//! or the strict derive, for callgrind to count instructions (which timing cannot compare as
//! finely):
//!
//!   valgrind --tool=callgrind target/release/decode_count lenient 20
//!   valgrind --tool=callgrind target/release/decode_count strict 20

use benches::decode_fixture::{large_reply_text, strict};
use gpu_partition_types::Reply;
use std::hint::black_box;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_default();
    let times: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(20);
    let text = large_reply_text();
    let bytes = text.as_bytes();
    let mut decoded = 0usize;
    for _ in 0..times {
        decoded += match which.as_str() {
            "lenient" => Reply::from_json(black_box(bytes), None).map_or(0, |_| 1),
            "strict" => serde_json::from_slice::<strict::Reply>(black_box(bytes)).map_or(0, |_| 1),
            _ => {
                eprintln!("usage: decode_count lenient|strict [TIMES]");
                return ExitCode::from(2);
            }
        };
    }
    println!("{decoded} of {times} decoded, {} bytes each", bytes.len());
    ExitCode::SUCCESS
}
