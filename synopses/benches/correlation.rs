//! Benchmark (d): finding every pair of series whose last-256-value windows correlate at
//! 0.9 or more, among 500 and 5,000 series — the DFT synopsis' grid search (candidates from
//! neighbouring cells, pruned by the spectra's bounds, then checked exactly) against the
//! naive search that checks every pair. Both return the same pairs (the unit tests check
//! that); the ratio is what the synopsis saves. Prints how many pairs each search checked.
//!
//!     cargo bench -p brook-synopses --bench correlation

use brook_synopses::dft::{all_pairs, correlated_pairs, Dft};
use brook_synopses::Synopsis;
use criterion::{criterion_group, criterion_main, Criterion};
use datafusion::arrow::array::Float64Array;
use std::hint::black_box;

const WINDOW: usize = 256;
const COEFFICIENTS: usize = 8;
const THRESHOLD: f64 = 0.9;

/// A fixed pseudo-random standard normal sequence (SplitMix64 and Box–Muller).
struct Normal(u64);

impl Normal {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn sample(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// `n` price series (random walks): one of `n / 25` sector walks plus an own walk of random
/// weight — some pairs correlate strongly, most do not (as stocks do).
fn market(n: usize) -> Vec<Dft> {
    let len = 2 * WINDOW;
    let mut rng = Normal(7);
    let sectors: Vec<Vec<f64>> = (0..(n / 25).max(1))
        .map(|_| {
            let mut x = 0.0;
            (0..len)
                .map(|_| {
                    x += rng.sample();
                    x
                })
                .collect()
        })
        .collect();
    (0..n)
        .map(|i| {
            let sector = &sectors[i % sectors.len()];
            let own = 0.05 + 1.5 * rng.uniform();
            let mut x = 0.0;
            let values: Vec<f64> = sector
                .iter()
                .map(|s| {
                    x += own * rng.sample();
                    100.0 + s + x
                })
                .collect();
            let mut d = Dft::new(WINDOW, COEFFICIENTS).expect("dft");
            d.add(&Float64Array::from(values)).expect("add");
            d
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("correlated_pairs");
    g.sample_size(10);
    for n in [500, 5_000] {
        let series = market(n);
        let refs: Vec<&Dft> = series.iter().collect();
        let search = correlated_pairs(&refs, THRESHOLD).expect("search");
        let naive = all_pairs(&refs, THRESHOLD).expect("naive");
        assert_eq!(search.pairs.len(), naive.len());
        eprintln!(
            "{n} series: {} pairs ≥ {THRESHOLD}; grid candidates {} and exact checks {} of {} pairs",
            naive.len(),
            search.candidates,
            search.verified,
            n * (n - 1) / 2
        );
        g.bench_function(format!("{n}/dft"), |b| {
            b.iter(|| {
                black_box(
                    correlated_pairs(&refs, THRESHOLD)
                        .expect("search")
                        .pairs
                        .len(),
                )
            })
        });
        g.bench_function(format!("{n}/naive"), |b| {
            b.iter(|| black_box(all_pairs(&refs, THRESHOLD).expect("naive").len()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
