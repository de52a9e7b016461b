//! Update cost per value: each synopsis fed an Arrow array through Brook's `Synopsis::add`
//! (what the SQL aggregates and `CREATE SYNOPSIS` run) against the raw `datasketches` crate
//! fed the same values one by one. The ratio is the engine's overhead (goal: ≤ 1.5×).
//!
//!     cargo bench -p brook-synopses --bench update

use brook_synopses::frequent::Frequent;
use brook_synopses::hll::Hll;
use brook_synopses::kll::Kll;
use brook_synopses::theta::Theta;
use brook_synopses::{cpc::Cpc, Synopsis};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use datafusion::arrow::array::{Float64Array, Int64Array};
use datasketches::frequencies::FrequentItemsSketch;
use datasketches::hll::{HllSketch, HllType};
use datasketches::kll::{KllFloat, KllSketch};
use std::hint::black_box;

const N: usize = 100_000;

fn values() -> Vec<i64> {
    // A fixed pseudo-random sequence over ~50 K distinct values (SplitMix64).
    let mut s = 42u64;
    (0..N)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) % 50_000) as i64
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let raw = values();
    let ints = Int64Array::from(raw.clone());
    let doubles = Float64Array::from(raw.iter().map(|v| *v as f64).collect::<Vec<_>>());
    let mut g = c.benchmark_group("update");
    g.throughput(Throughput::Elements(N as u64));

    g.bench_function("hll/brook", |b| {
        b.iter(|| {
            let mut s = Hll::new(12).expect("hll");
            s.add(&ints).expect("add");
            black_box(s.memory_bytes())
        })
    });
    g.bench_function("hll/crate", |b| {
        b.iter(|| {
            let mut s = HllSketch::new(12, HllType::Hll8).expect("hll");
            for v in &raw {
                s.update(*v);
            }
            black_box(s.estimated_size())
        })
    });
    g.bench_function("cpc/brook", |b| {
        b.iter(|| {
            let mut s = Cpc::new(11).expect("cpc");
            s.add(&ints).expect("add");
            black_box(s.memory_bytes())
        })
    });
    g.bench_function("cpc/crate", |b| {
        b.iter(|| {
            let mut s = datasketches::cpc::CpcSketch::new(11).expect("cpc");
            for v in &raw {
                s.update(*v);
            }
            black_box(s.estimated_size())
        })
    });
    g.bench_function("theta/brook", |b| {
        b.iter(|| {
            let mut s = Theta::new(12).expect("theta");
            s.add(&ints).expect("add");
            black_box(s.memory_bytes())
        })
    });
    g.bench_function("theta/crate", |b| {
        b.iter(|| {
            let mut s = datasketches::theta::ThetaSketchBuilder::default()
                .lg_k(12)
                .build()
                .expect("theta");
            for v in &raw {
                s.update(*v);
            }
            black_box(s.estimated_size())
        })
    });
    g.bench_function("kll/brook", |b| {
        b.iter(|| {
            let mut s = Kll::new(200).expect("kll");
            s.add(&doubles).expect("add");
            black_box(s.memory_bytes())
        })
    });
    g.bench_function("kll/crate", |b| {
        b.iter(|| {
            let mut s: KllSketch<KllFloat<f64>> = KllSketch::new(200).expect("kll");
            for v in &raw {
                if let Ok(x) = KllFloat::<f64>::new(*v as f64) {
                    s.update(x);
                }
            }
            black_box(s.n())
        })
    });
    g.bench_function("frequent/brook", |b| {
        b.iter(|| {
            let mut s = Frequent::longs(10).expect("frequent");
            s.add(&ints).expect("add");
            black_box(s.total_weight())
        })
    });
    g.bench_function("frequent/crate", |b| {
        b.iter(|| {
            let mut s = FrequentItemsSketch::<i64>::new(1 << 10).expect("frequent");
            for v in &raw {
                s.update(*v);
            }
            black_box(s.total_weight())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
