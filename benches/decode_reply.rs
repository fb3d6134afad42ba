//! Decoding a large reply (64 profiles with their placements, 64 GPU instances, 512 vGPUs, 16
//! processes, about 220 KB) with the
//! lenient reader, against a plain strict `#[derive(Deserialize)]` decode of the same shape.

use benches::decode_fixture::{large_reply, strict};
use criterion::{Criterion, criterion_group, criterion_main};
use gpu_partition_types::Reply;
use std::hint::black_box;

fn decode(c: &mut Criterion) {
    // Indented, as a helper that pretty-prints writes it: about 200 KB.
    let text = serde_json::to_string_pretty(&large_reply()).unwrap_or_default();
    let bytes = text.as_bytes();
    // Both decoders must accept the input, or the comparison means nothing.
    assert!(Reply::from_json(bytes, None).is_ok_and(|reply| reply.lost().is_empty()));
    assert!(serde_json::from_slice::<strict::Reply>(bytes).is_ok());
    eprintln!("reply size: {} bytes", bytes.len());

    let mut group = c.benchmark_group("decode_large_reply");
    group.bench_function("strict_derive_baseline", |b| {
        b.iter(|| serde_json::from_slice::<strict::Reply>(black_box(bytes)).map(|r| r.vgpus.len()))
    });
    group.bench_function("lenient_reader", |b| {
        b.iter(|| Reply::from_json(black_box(bytes), None).map(|r| r.format))
    });
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
