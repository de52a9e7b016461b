//! DFT synopsis of a sliding window, for finding correlated series among many (StatStream).
//!
//! Written here: no Rust library keeps one. After Zhu & Shasha, "StatStream: Statistical
//! Monitoring of Thousands of Data Streams in Real Time" (VLDB 2002). Each series keeps its
//! last `window` values and the first `k` coefficients of their discrete Fourier transform.
//! A new value slides the window and updates every kept coefficient in O(1)
//! (`X_f ← (X_f − x_out + x_in)·e^{2πif/w}`); every `window` slides the spectrum is
//! recomputed exactly with `rustfft`, so rounding never accumulates.
//!
//! Why it finds correlated pairs: z-normalize a window (`x̂ = (x − μ)/(σ√w)`, so `‖x̂‖ = 1`)
//! and Pearson's `corr(x, y) = 1 − ‖x̂ − ŷ‖²/2`. The unitary DFT keeps distances (Parseval)
//! and a real series' spectrum is conjugate-symmetric, so the first `k` coefficients give a
//! feature vector `v ∈ R^{2k}` with `‖v_x − v_y‖ ≤ ‖x̂ − ŷ‖`: pairs with `corr ≥ c` are within
//! `ε = √(2(1−c))` in feature space, hence in the same or a neighbouring cell of a grid of
//! side `ε`. Only those pairs are candidates; the energy a series leaves outside its kept
//! coefficients bounds the rest of the distance, which gives every estimate deterministic
//! bounds and prunes most candidates before they are checked exactly on the windows.
//!
//! Serialized form (Brook's own): magic `BDFT`, version byte, window and coefficients as
//! little-endian u32, values seen as u64, values held as u32, then those values (oldest
//! first) as f64. The spectrum is recomputed when read.
//!
//! Invariant: `merge(a, b)` is the synopsis of `a`'s values followed by `b`'s — a window is
//! ordered, so unlike the other synopses merging is not symmetric.

use crate::{Estimate, Synopsis};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::Array;
use rustfft::num_complex::Complex64;
use rustfft::{Fft, FftPlanner};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

/// Coefficients kept when not given.
pub const DEFAULT_COEFFICIENTS: usize = 8;
/// Allowed window sizes.
pub const WINDOW_RANGE: (usize, usize) = (4, 1 << 20);
/// Feature coordinates used for the grid: more dimensions split the candidates finer, but
/// each cell has `3^dims` neighbours to visit.
const GRID_DIMS: usize = 4;

const MAGIC: &[u8; 4] = b"BDFT";
const VERSION: u8 = 1;
const HEADER: usize = 4 + 1 + 4 + 4 + 8 + 4;

/// The last `window` values of one series and the first coefficients of their DFT.
#[derive(Clone)]
pub struct Dft {
    window: usize,
    coefficients: usize,
    /// The window, oldest first; at most `window` values.
    values: VecDeque<f64>,
    /// Non-null values offered so far.
    seen: u64,
    /// `X_f` for `f = 1..=k` over `values`; valid once the window is full.
    spectrum: Vec<Complex64>,
    /// `e^{2πif/w}`: one slide multiplies `X_f` by it.
    rotation: Vec<Complex64>,
    /// Sum and sum of squares of `values − shift`. The shift (the mean at the last exact
    /// recompute) keeps the variance accurate for series far from zero (prices).
    shift: f64,
    sum: f64,
    sum_sq: f64,
    /// Slides since the spectrum and sums were last computed exactly.
    slides: usize,
    fft: Arc<dyn Fft<f64>>,
}

impl fmt::Debug for Dft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dft")
            .field("window", &self.window)
            .field("coefficients", &self.coefficients)
            .field("held", &self.values.len())
            .field("seen", &self.seen)
            .finish()
    }
}

/// A full window's normalized spectrum: what correlation estimates are made of.
#[derive(Debug, Clone, PartialEq)]
pub struct Spectrum {
    /// Unitary DFT coefficients `f = 1..=k` of the z-normalized window.
    pub coefficients: Vec<Complex64>,
    /// Energy of the normalized window outside the kept coefficients (and their mirrors),
    /// in [0, 1].
    pub residual: f64,
}

impl Spectrum {
    /// Correlation of the two windows estimated from their spectra, with bounds that always
    /// hold: the unkept parts of the two spectra are at most `√r_a + √r_b` and at least
    /// `|√r_a − √r_b|` apart.
    pub fn correlation(&self, other: &Spectrum) -> Estimate {
        let mut dot = 0.0;
        let mut dist = 0.0;
        for (a, b) in self.coefficients.iter().zip(&other.coefficients) {
            dot += (a * b.conj()).re;
            dist += (a - b).norm_sqr();
        }
        // Each kept coefficient stands for itself and its conjugate mirror.
        let (dot, dist) = (2.0 * dot, 2.0 * dist);
        let (ra, rb) = (self.residual.sqrt(), other.residual.sqrt());
        let lower = (1.0 - (dist + (ra + rb).powi(2)) / 2.0).max(-1.0);
        let upper = (1.0 - (dist + (ra - rb).powi(2)) / 2.0).min(1.0);
        // Point estimate: the cosine of the kept parts, i.e. the unkept parts taken to
        // correlate as the kept ones do (low frequencies carry most of a walk's energy).
        let kept = ((1.0 - self.residual) * (1.0 - other.residual)).sqrt();
        let cosine = if kept > 0.0 { dot / kept } else { 0.0 };
        Estimate {
            value: cosine.clamp(lower, upper),
            lower,
            upper,
        }
    }

    /// The feature vector's coordinate `i` (real and imaginary parts, scaled so that
    /// feature distance is spectrum distance).
    fn feature(&self, i: usize) -> f64 {
        let c = self.coefficients[i / 2];
        std::f64::consts::SQRT_2 * if i.is_multiple_of(2) { c.re } else { c.im }
    }
}

thread_local! {
    /// One planner per thread: it keeps the plans it made, so the thousands of synopses of
    /// one window size (one per key, and one per sketch read back) share one plan.
    static PLANNER: std::cell::RefCell<FftPlanner<f64>> = std::cell::RefCell::new(FftPlanner::new());
}

/// The forward FFT of `window` points.
fn plan(window: usize) -> Arc<dyn Fft<f64>> {
    PLANNER.with(|p| p.borrow_mut().plan_fft_forward(window))
}

impl Dft {
    /// An empty synopsis of the last `window` values keeping `coefficients` coefficients.
    /// The kept coefficients and their mirrors must not overlap: `2·k < window` (22023).
    pub fn new(window: usize, coefficients: usize) -> Result<Self> {
        if !(WINDOW_RANGE.0..=WINDOW_RANGE.1).contains(&window) {
            return Err(brook_err!(
                InvalidParameter,
                "DFT window must be between {} and {}, got {window}",
                WINDOW_RANGE.0,
                WINDOW_RANGE.1
            ));
        }
        if coefficients == 0 || 2 * coefficients >= window {
            return Err(brook_err!(InvalidParameter, "DFT coefficients must be between 1 and {} for a window of {window}, got {coefficients}",
                (window - 1) / 2));
        }
        let step = 2.0 * std::f64::consts::PI / window as f64;
        Ok(Dft {
            window,
            coefficients,
            values: VecDeque::with_capacity(window),
            seen: 0,
            spectrum: vec![Complex64::default(); coefficients],
            rotation: (1..=coefficients)
                .map(|f| Complex64::from_polar(1.0, step * f as f64))
                .collect(),
            shift: 0.0,
            sum: 0.0,
            sum_sq: 0.0,
            slides: 0,
            fft: plan(window),
        })
    }

    /// Window size.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Coefficients kept.
    pub fn coefficients(&self) -> usize {
        self.coefficients
    }

    /// Non-null values offered so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Set the count of values seen (for a window rebuilt from its last values).
    pub fn set_seen(&mut self, seen: u64) {
        self.seen = seen.max(self.values.len() as u64);
    }

    /// The values in the window, oldest first.
    pub fn values(&self) -> &VecDeque<f64> {
        &self.values
    }

    /// Offer one value. Not-a-number and infinities are refused (22003): one would make
    /// every correlation of the window undefined.
    pub fn push(&mut self, x: f64) -> Result<()> {
        if !x.is_finite() {
            return Err(brook_err!(
                OutOfRange,
                "a DFT synopsis needs finite values, got {x}"
            ));
        }
        self.seen += 1;
        if self.values.len() < self.window {
            self.values.push_back(x);
            if self.values.len() == self.window {
                self.recompute();
            }
            return Ok(());
        }
        let out = self.values.pop_front().unwrap_or(x);
        self.values.push_back(x);
        let delta = x - out;
        for (c, r) in self.spectrum.iter_mut().zip(&self.rotation) {
            *c = (*c + delta) * r;
        }
        let (a, b) = (x - self.shift, out - self.shift);
        self.sum += a - b;
        self.sum_sq += a * a - b * b;
        self.slides += 1;
        if self.slides >= self.window {
            self.recompute();
        }
        Ok(())
    }

    /// Spectrum and sums computed afresh from the window.
    fn recompute(&mut self) {
        let mut buffer: Vec<Complex64> = self
            .values
            .iter()
            .map(|&v| Complex64::new(v, 0.0))
            .collect();
        self.fft.process(&mut buffer);
        self.spectrum
            .copy_from_slice(&buffer[1..=self.coefficients]);
        self.shift = self.values.iter().sum::<f64>() / self.values.len() as f64;
        self.sum = self.values.iter().map(|v| v - self.shift).sum();
        self.sum_sq = self.values.iter().map(|v| (v - self.shift).powi(2)).sum();
        self.slides = 0;
    }

    /// The normalized spectrum of a full window; `None` before the window fills or when the
    /// window is constant (its correlation is undefined, as PostgreSQL's `corr` is NULL).
    pub fn spectrum(&self) -> Option<Spectrum> {
        if self.values.len() < self.window {
            return None;
        }
        let w = self.window as f64;
        let mean = self.sum / w;
        let variance = self.sum_sq / w - mean * mean;
        if variance <= 0.0 || !variance.is_finite() {
            return None;
        }
        let scale = 1.0 / (w * variance.sqrt());
        let coefficients: Vec<Complex64> = self.spectrum.iter().map(|c| c * scale).collect();
        let kept: f64 = 2.0 * coefficients.iter().map(|c| c.norm_sqr()).sum::<f64>();
        Some(Spectrum {
            coefficients,
            residual: (1.0 - kept).clamp(0.0, 1.0),
        })
    }

    /// The z-normalized window (unit length, zero mean); `None` as for [`Dft::spectrum`].
    pub fn normalized(&self) -> Option<Vec<f64>> {
        normalize(self.values.iter().copied(), self.window)
    }
}

/// `values` minus their mean, scaled to unit length; `None` when fewer than `window` values
/// or constant.
fn normalize(values: impl Iterator<Item = f64> + Clone, window: usize) -> Option<Vec<f64>> {
    let n = values.clone().count();
    if n < window || n == 0 {
        return None;
    }
    let mean = values.clone().sum::<f64>() / n as f64;
    let centred: Vec<f64> = values.map(|v| v - mean).collect();
    let norm = centred.iter().map(|v| v * v).sum::<f64>().sqrt();
    if norm <= 0.0 || !norm.is_finite() {
        return None;
    }
    Some(centred.into_iter().map(|v| v / norm).collect())
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl Synopsis for Dft {
    fn add(&mut self, values: &dyn Array) -> Result<()> {
        let doubles = crate::values::as_f64(values)?;
        for v in doubles.iter().flatten() {
            self.push(v)?;
        }
        Ok(())
    }

    fn merge(&mut self, other: &Self) -> Result<()> {
        if other.window != self.window || other.coefficients != self.coefficients {
            return Err(brook_err!(
                InvalidParameter,
                "cannot merge DFT synopses of window {}/{} coefficients with {}/{}",
                self.window,
                self.coefficients,
                other.window,
                other.coefficients
            ));
        }
        for &v in &other.values {
            self.push(v)?;
        }
        // Values `other` saw before its window count as seen here too.
        self.seen += other.seen - other.values.len() as u64;
        Ok(())
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + 8 * self.values.len());
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&(self.window as u32).to_le_bytes());
        out.extend_from_slice(&(self.coefficients as u32).to_le_bytes());
        out.extend_from_slice(&self.seen.to_le_bytes());
        out.extend_from_slice(&(self.values.len() as u32).to_le_bytes());
        for v in &self.values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = |why: &str| brook_err!(InvalidBinary, "not a valid DFT synopsis: {why}");
        if bytes.len() < HEADER || &bytes[..4] != MAGIC || bytes[4] != VERSION {
            return Err(bad("wrong header"));
        }
        let u32_at = |at: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[at..at + 4]);
            u32::from_le_bytes(b) as usize
        };
        let mut seen = [0u8; 8];
        seen.copy_from_slice(&bytes[13..21]);
        let seen = u64::from_le_bytes(seen);
        let (window, coefficients, held) = (u32_at(5), u32_at(9), u32_at(21));
        if held > window || held as u64 > seen || bytes.len() != HEADER + 8 * held {
            return Err(bad("its length does not match its header"));
        }
        let mut dft = Dft::new(window, coefficients).map_err(|e| bad(&e.to_string()))?;
        for chunk in bytes[HEADER..].chunks_exact(8) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            dft.push(f64::from_le_bytes(b))
                .map_err(|e| bad(&e.to_string()))?;
        }
        dft.set_seen(seen);
        Ok(dft)
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + 8 * self.values.capacity() + 32 * self.coefficients
    }
}

/// A pair of series whose windows correlate at least as asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    /// Index of the first series (the smaller index).
    pub left: usize,
    /// Index of the second series.
    pub right: usize,
    /// Pearson correlation of the two windows (exact).
    pub correlation: f64,
}

/// What a pair search did, to see how much the grid and the bounds pruned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Search {
    /// The pairs found, ordered by (left, right).
    pub pairs: Vec<Pair>,
    /// Series with a full, non-constant window (the others take part in no pair).
    pub series: usize,
    /// Pairs in the same or neighbouring grid cells.
    pub candidates: usize,
    /// Candidates whose spectra could not rule them out, checked on the windows.
    pub verified: usize,
}

/// `c` as a correlation threshold in [-1, 1] (22023 otherwise).
fn check_threshold(c: f64) -> Result<f64> {
    if (-1.0..=1.0).contains(&c) {
        Ok(c)
    } else {
        Err(brook_err!(
            InvalidParameter,
            "a correlation threshold must be between -1 and 1, got {c}"
        ))
    }
}

/// Every pair of `series` whose windows correlate at `threshold` or more, found through the
/// grid: exact (each candidate is checked on the windows), with no pair missed (the grid
/// and the bounds only drop pairs that cannot reach the threshold).
pub fn correlated_pairs(series: &[&Dft], threshold: f64) -> Result<Search> {
    let threshold = check_threshold(threshold)?;
    if let Some(first) = series.first() {
        if let Some(odd) = series
            .iter()
            .find(|s| s.window != first.window || s.coefficients != first.coefficients)
        {
            return Err(brook_err!(
                InvalidParameter,
                "correlated series need one window and coefficient count, got {}/{} and {}/{}",
                first.window,
                first.coefficients,
                odd.window,
                odd.coefficients
            ));
        }
    }
    let live: Vec<(usize, Spectrum, Vec<f64>)> = series
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s.spectrum()?, s.normalized()?)))
        .collect();
    let mut search = Search {
        series: live.len(),
        ..Search::default()
    };
    let Some((_, first, _)) = live.first() else {
        return Ok(search);
    };
    let dims = GRID_DIMS.min(2 * first.coefficients.len());
    // Cells of side ε: a qualifying pair is at most ε apart in every coordinate.
    let side = (2.0 * (1.0 - threshold)).sqrt().max(1e-9);
    let mut grid: HashMap<Vec<i64>, Vec<usize>> = HashMap::new();
    for (at, (_, spectrum, _)) in live.iter().enumerate() {
        let cell = (0..dims)
            .map(|d| (spectrum.feature(d) / side).floor() as i64)
            .collect();
        grid.entry(cell).or_default().push(at);
    }
    let offsets = neighbour_offsets(dims);
    let check = |a: usize, b: usize, search: &mut Search| {
        search.candidates += 1;
        let (ia, sa, za) = &live[a];
        let (ib, sb, zb) = &live[b];
        if sa.correlation(sb).upper < threshold {
            return;
        }
        search.verified += 1;
        let correlation = dot(za, zb);
        if correlation >= threshold {
            search.pairs.push(Pair {
                left: (*ia).min(*ib),
                right: (*ia).max(*ib),
                correlation,
            });
        }
    };
    for (cell, members) in &grid {
        for offset in &offsets {
            let other: Vec<i64> = cell.iter().zip(offset).map(|(c, o)| c + o).collect();
            // Each unordered pair of cells once: from the lexicographically smaller one.
            if other < *cell {
                continue;
            }
            if other == *cell {
                for (i, &a) in members.iter().enumerate() {
                    for &b in &members[i + 1..] {
                        check(a, b, &mut search);
                    }
                }
            } else if let Some(neighbours) = grid.get(&other) {
                for &a in members {
                    for &b in neighbours {
                        check(a, b, &mut search);
                    }
                }
            }
        }
    }
    search.pairs.sort_by_key(|p| (p.left, p.right));
    Ok(search)
}

/// `{-1, 0, 1}^dims`.
fn neighbour_offsets(dims: usize) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new()];
    for _ in 0..dims {
        out = out
            .into_iter()
            .flat_map(|o| {
                [-1, 0, 1].into_iter().map(move |d| {
                    let mut o = o.clone();
                    o.push(d);
                    o
                })
            })
            .collect();
    }
    out
}

/// The naive search the grid is measured against: every pair checked on its windows.
pub fn all_pairs(series: &[&Dft], threshold: f64) -> Result<Vec<Pair>> {
    let threshold = check_threshold(threshold)?;
    let live: Vec<(usize, Vec<f64>)> = series
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s.normalized()?)))
        .collect();
    let mut pairs = Vec::new();
    for (i, (ia, za)) in live.iter().enumerate() {
        for (ib, zb) in &live[i + 1..] {
            let correlation = dot(za, zb);
            if correlation >= threshold {
                pairs.push(Pair {
                    left: *ia,
                    right: *ib,
                    correlation,
                });
            }
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Float64Array, Int64Array};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, Normal};

    /// `n` series of `len` values: random walks driven by `factors` shared walks plus an own
    /// walk of random weight, so some pairs correlate strongly and most do not.
    fn market(n: usize, len: usize, factors: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = StdRng::seed_from_u64(seed);
        let step = Normal::new(0.0, 1.0).unwrap();
        let walks: Vec<Vec<f64>> = (0..factors)
            .map(|_| {
                let mut x = 0.0;
                (0..len)
                    .map(|_| {
                        x += step.sample(&mut rng);
                        x
                    })
                    .collect()
            })
            .collect();
        (0..n)
            .map(|_| {
                let f = &walks[rng.random_range(0..factors)];
                let own: f64 = rng.random_range(0.05..1.5);
                let mut x = 100.0;
                f.iter()
                    .map(|v| {
                        x += own * step.sample(&mut rng);
                        100.0 + v + x
                    })
                    .collect()
            })
            .collect()
    }

    fn synopsis(values: &[f64], window: usize, k: usize) -> Dft {
        let mut d = Dft::new(window, k).unwrap();
        d.add(&Float64Array::from(values.to_vec())).unwrap();
        d
    }

    fn fresh_spectrum(values: &[f64], k: usize) -> Vec<Complex64> {
        let mut buf: Vec<Complex64> = values.iter().map(|&v| Complex64::new(v, 0.0)).collect();
        FftPlanner::new()
            .plan_fft_forward(values.len())
            .process(&mut buf);
        buf[1..=k].to_vec()
    }

    #[test]
    fn sliding_updates_match_a_fresh_transform() {
        let series = market(1, 1000, 1, 7).remove(0);
        // 64 + 37 slides: between two exact recomputes.
        let d = synopsis(&series[..64 + 37], 64, 6);
        let want = fresh_spectrum(&series[37..64 + 37], 6);
        for (got, want) in d.spectrum.iter().zip(&want) {
            assert!((got - want).norm() < 1e-8, "{got} vs {want}");
        }
        assert_eq!(d.values().len(), 64);
        assert_eq!(d.seen(), 101);
    }

    #[test]
    fn estimates_bound_the_true_correlation() {
        let series = market(60, 300, 4, 11);
        let synopses: Vec<Dft> = series.iter().map(|s| synopsis(s, 128, 4)).collect();
        let mut checked = 0;
        for a in &synopses {
            for b in &synopses {
                let (sa, sb) = (a.spectrum().unwrap(), b.spectrum().unwrap());
                let truth = dot(&a.normalized().unwrap(), &b.normalized().unwrap());
                let e = sa.correlation(&sb);
                assert!(
                    e.lower - 1e-9 <= truth && truth <= e.upper + 1e-9,
                    "{truth} outside {e:?}"
                );
                assert!(e.lower <= e.value && e.value <= e.upper);
                checked += 1;
            }
        }
        assert_eq!(checked, 3600);
    }

    #[test]
    fn grid_search_finds_exactly_the_naive_pairs_and_prunes() {
        let series = market(400, 256, 20, 3);
        let synopses: Vec<Dft> = series.iter().map(|s| synopsis(s, 256, 8)).collect();
        let refs: Vec<&Dft> = synopses.iter().collect();
        for threshold in [0.5, 0.9, 0.99] {
            let want = all_pairs(&refs, threshold).unwrap();
            let got = correlated_pairs(&refs, threshold).unwrap();
            let key = |p: &[Pair]| p.iter().map(|p| (p.left, p.right)).collect::<Vec<_>>();
            assert_eq!(key(&got.pairs), key(&want), "threshold {threshold}");
            assert!(!want.is_empty(), "threshold {threshold} found nothing");
            for (g, w) in got.pairs.iter().zip(&want) {
                assert!((g.correlation - w.correlation).abs() < 1e-12);
            }
            if threshold >= 0.9 {
                // The point of the synopsis: far fewer exact checks than all 79,800 pairs.
                assert!(got.verified * 4 < 400 * 399 / 2, "{threshold}: {got:?}");
            }
        }
    }

    #[test]
    fn batch_boundaries_and_merge_do_not_change_the_window() {
        let series = market(1, 700, 1, 5).remove(0);
        let whole = synopsis(&series, 100, 5);
        let mut chunked = Dft::new(100, 5).unwrap();
        let mut merged = Dft::new(100, 5).unwrap();
        for chunk in series.chunks(37) {
            chunked.add(&Float64Array::from(chunk.to_vec())).unwrap();
            merged.merge(&synopsis(chunk, 100, 5)).unwrap();
        }
        for d in [&chunked, &merged] {
            assert_eq!(d.values(), whole.values());
            assert_eq!(d.seen(), 700);
            let (a, b) = (d.spectrum().unwrap(), whole.spectrum().unwrap());
            assert!((a.correlation(&b).value - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn bytes_round_trip_and_garbage_is_refused() {
        let d = synopsis(&market(1, 300, 1, 9).remove(0), 64, 3);
        let back = Dft::from_bytes(&d.to_bytes()).unwrap();
        assert_eq!(back.values(), d.values());
        assert_eq!(back.seen(), 300);
        let (a, b) = (back.spectrum().unwrap(), d.spectrum().unwrap());
        for (x, y) in a.coefficients.iter().zip(&b.coefficients) {
            assert!((x - y).norm() < 1e-9);
        }
        for garbage in [&b"BDFT"[..], b"hello world, this is not a synopsis"] {
            assert_eq!(Dft::from_bytes(garbage).unwrap_err().sqlstate(), "22P03");
        }
        let mut truncated = d.to_bytes();
        truncated.pop();
        assert_eq!(Dft::from_bytes(&truncated).unwrap_err().sqlstate(), "22P03");
    }

    #[test]
    fn undefined_correlations_and_bad_parameters() {
        // A constant window and a window not yet full have no spectrum.
        assert!(synopsis(&[5.0; 20], 8, 2).spectrum().is_none());
        assert!(synopsis(&[1.0, 2.0, 3.0], 8, 2).spectrum().is_none());
        assert_eq!(Dft::new(8, 4).unwrap_err().sqlstate(), "22023");
        assert_eq!(Dft::new(2, 1).unwrap_err().sqlstate(), "22023");
        let mut d = Dft::new(8, 2).unwrap();
        assert_eq!(d.push(f64::NAN).unwrap_err().sqlstate(), "22003");
        assert_eq!(
            correlated_pairs(&[&d], 1.5).unwrap_err().sqlstate(),
            "22023"
        );
        let other = Dft::new(16, 2).unwrap();
        assert_eq!(
            correlated_pairs(&[&d, &other], 0.9).unwrap_err().sqlstate(),
            "22023"
        );
        // Integers are read as doubles; nulls are skipped.
        d.add(&Int64Array::from(vec![Some(1), None, Some(3)]))
            .unwrap();
        assert_eq!(d.seen(), 2);
    }
}
