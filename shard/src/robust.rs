//! The split for when nothing was measured: shapes whose cost is known only to grow with their
//! size, by an unknown law. LPT by any one model (the product, its square root) balances the
//! profiles near that model and falls apart on the others: by the product, the largest products
//! get shards of their own and the rest pile up (on the bench's 53 shapes at 8 shards, LPT by P
//! gets 0.47 of ideal in the worst case below, the product model's P / mean + 1 gets 0.79, this
//! module 0.92). This module picks the split whose worst efficiency over a family of
//! profiles is best (docs/CONTRACT.md, warmup-shard's `robust` model):
//!
//! - the family: cost = P^a for each a in [`EXPONENTS`] (P the shape's product of numbers), and
//!   log-normal tails by rank: the shapes ranked by P, the r-th of n costing
//!   exp(sigma * probit((r + 0.5) / n)) for each sigma in [`TAILS`] (equal products share the
//!   mean of their ranks' costs), so that a few large shapes may cost far more than their share;
//! - starts: LPT by P^b for b in [`CANDIDATES`], and LPT by each shape's mean share of the
//!   family's profiles;
//! - from each start, a descent on the soft maximum `sum (makespan / ideal)^p` over the family
//!   (p in [`POWERS`]; every single move and every swap of two shapes, first improvement taken),
//!   then a polish of the worst profile's fullest shard (a move or a swap out of it is taken when
//!   it raises the worst efficiency, or keeps it and lowers the soft maximum at p = 16);
//! - the split with the best worst efficiency wins, the earlier on a tie. All of it within a
//!   fixed budget of work ([`BUDGET`]), counted, not timed: the same input gives the same split,
//!   and thousands of shapes take a fraction of a second more than LPT (which is near even
//!   there anyway); the best starts are searched first, so that they get the budget.
//!
//! Efficiency under a profile = ideal / makespan, ideal = max(total / k, largest shape).
//! A shape's expected cost in the plan is its mean share of the family's profiles times the
//! number of shapes (units of the mean shape). Profiles outside the family (costs that size
//! predicts only roughly, or not at all) have no such floor; measured costs (`--costs`,
//! `--history`) are what balance them. The figures (worst cases on the bench's shapes, time per
//! thousand shapes): BENCHMARKS.md, "Figures the contract used to carry".

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The exponents a of the profiles cost = P^a the split is judged by.
pub const EXPONENTS: [f64; 7] = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5];
/// The sigmas of the log-normal, rank-ordered profiles the split is judged by.
pub const TAILS: [f64; 2] = [0.5, 1.0];
/// The exponents b of the LPT starts (LPT by P^b).
const CANDIDATES: [f64; 16] = [
    0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5,
];
/// The powers of the soft maximum each start descends on.
const POWERS: [i32; 3] = [8, 16, 32];
/// The polish's soft maximum.
const POLISH: i32 = 16;
/// Profile loads compared, over the whole search: about 0.3 s in a release build (53 shapes take
/// 5 million of them).
const BUDGET: u64 = 20_000_000;

/// The family's profiles for these products, each scaled to sum to 1 (a profile that sums to 0,
/// as P^a does at a > 0 when every product is 0, is left out).
pub fn profiles(products: &[f64]) -> Vec<Vec<f64>> {
    let top = products.iter().copied().fold(0.0, f64::max);
    let ratio: Vec<f64> = products
        .iter()
        .map(|&p| if top > 0.0 { p / top } else { 0.0 })
        .collect();
    let powers = EXPONENTS
        .iter()
        .map(|&a| ratio.iter().map(|r| r.powf(a)).collect::<Vec<f64>>());
    let tails = TAILS.iter().map(|&sigma| tail(products, sigma));
    powers
        .chain(tails)
        .filter_map(|raw| {
            let sum: f64 = raw.iter().sum();
            (sum > 0.0 && sum.is_finite()).then(|| raw.into_iter().map(|c| c / sum).collect())
        })
        .collect()
}

/// The log-normal quantiles handed out by rank of product, ties sharing their mean.
fn tail(products: &[f64], sigma: f64) -> Vec<f64> {
    let n = products.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| products[a].total_cmp(&products[b]).then(a.cmp(&b)));
    let quantile = |r: usize| (sigma * probit((r as f64 + 0.5) / n as f64)).exp();
    let mut out = vec![0.0; n];
    let mut r = 0;
    while r < n {
        let mut end = r + 1;
        while end < n && products[order[end]] == products[order[r]] {
            end += 1;
        }
        let mean = (r..end).map(quantile).sum::<f64>() / (end - r) as f64;
        for &j in &order[r..end] {
            out[j] = mean;
        }
        r = end;
    }
    out
}

/// The standard normal quantile function (Acklam's rational approximation, relative error
/// below 1.2e-9), for 0 < p < 1.
fn probit(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let low = 0.02425;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < low {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - low {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Each shape's mean share of the family's profiles, times the number of shapes: the split's
/// expected cost per shape, in units of the mean shape (they sum to the number of shapes).
pub fn mean_shares(products: &[f64]) -> Vec<f64> {
    let family = profiles(products);
    let n = products.len() as f64;
    (0..products.len())
        .map(|j| family.iter().map(|f| f[j]).sum::<f64>() * n / family.len().max(1) as f64)
        .collect()
}

/// The shard (0..k) of each shape: the split whose worst efficiency over the family is best.
pub fn assign(products: &[f64], k: usize) -> Vec<usize> {
    let n = products.len();
    if k >= n {
        return (0..n).collect();
    }
    let family = profiles(products);
    if family.is_empty() {
        return lpt(&vec![1.0; n], k);
    }
    let top = products.iter().copied().fold(0.0, f64::max);
    let mut starts: Vec<Vec<usize>> = CANDIDATES
        .iter()
        .map(|&b| {
            let weights: Vec<f64> = products
                .iter()
                .map(|&p| if top > 0.0 { (p / top).powf(b) } else { 1.0 })
                .collect();
            lpt(&weights, k)
        })
        .collect();
    starts.push(lpt(&mean_shares(products), k));
    let mut spent = 0u64;
    // Best starts first, so that where the budget runs out (thousands of shapes) it was spent
    // on them.
    let mut ranked: Vec<(f64, usize)> = starts
        .iter()
        .enumerate()
        .map(|(i, s)| (Search::new(&family, s.clone(), k, &mut spent).worst(), i))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut best: Option<(f64, Vec<usize>)> = ranked.first().map(|&(w, i)| (w, starts[i].clone()));
    let mut keep = |search: Search<'_>| {
        let worst = search.worst();
        if best.as_ref().is_none_or(|(w, _)| worst > *w) {
            best = Some((worst, search.shard_of));
        }
    };
    for &(_, i) in &ranked {
        if spent >= BUDGET {
            break; // every start was kept as it is above; none can be searched further
        }
        // The start polished as it is: what LPT alone would give stays a contender.
        let mut search = Search::new(&family, starts[i].clone(), k, &mut spent);
        search.polish();
        keep(search);
        for p in POWERS {
            let mut search = Search::new(&family, starts[i].clone(), k, &mut spent);
            search.descend(p);
            search.polish();
            keep(search);
        }
    }
    best.map_or_else(|| lpt(&vec![1.0; n], k), |(_, shard_of)| shard_of)
}

/// LPT: largest weight first (earlier on a tie) onto the shard with the least weight so far, then
/// the fewest shapes, then the lowest index.
fn lpt(weights: &[f64], k: usize) -> Vec<usize> {
    #[derive(PartialEq)]
    struct Bin(f64, usize, usize);
    impl Eq for Bin {}
    impl Ord for Bin {
        // Reversed: BinaryHeap pops the greatest, we want the least loaded.
        fn cmp(&self, o: &Self) -> Ordering {
            o.0.total_cmp(&self.0)
                .then(o.1.cmp(&self.1))
                .then(o.2.cmp(&self.2))
        }
    }
    impl PartialOrd for Bin {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
    let mut heap: BinaryHeap<Bin> = (0..k).map(|i| Bin(0.0, 0, i)).collect();
    let mut shard_of = vec![0; weights.len()];
    for j in order {
        let Some(Bin(load, count, i)) = heap.pop() else {
            break;
        };
        shard_of[j] = i;
        heap.push(Bin(load + weights[j], count + 1, i));
    }
    shard_of
}

/// One split being improved: each profile's load per shard, the three fullest shards of each
/// profile (so a change of two shards is judged without a pass over all of them), and the
/// search's share of the budget.
struct Search<'a> {
    family: &'a [Vec<f64>],
    shard_of: Vec<usize>,
    count: Vec<usize>,
    load: Vec<Vec<f64>>,
    top: Vec<[(f64, usize); 3]>,
    ideal: Vec<f64>,
    spent: &'a mut u64,
}

impl<'a> Search<'a> {
    fn new(
        family: &'a [Vec<f64>],
        shard_of: Vec<usize>,
        k: usize,
        spent: &'a mut u64,
    ) -> Search<'a> {
        let mut load = vec![vec![0.0; k]; family.len()];
        let mut count = vec![0; k];
        for &i in &shard_of {
            count[i] += 1;
        }
        for (f, l) in family.iter().zip(&mut load) {
            for (j, &i) in shard_of.iter().enumerate() {
                l[i] += f[j];
            }
        }
        let ideal = family
            .iter()
            .map(|f| f.iter().copied().fold(1.0 / k as f64, f64::max))
            .collect();
        let mut search = Search {
            family,
            shard_of,
            count,
            load,
            top: Vec::new(),
            ideal,
            spent,
        };
        search.rank();
        search
    }

    fn rank(&mut self) {
        self.top = self
            .load
            .iter()
            .map(|l| {
                let mut top = [(f64::NEG_INFINITY, usize::MAX); 3];
                for (i, &v) in l.iter().enumerate() {
                    if v > top[0].0 {
                        top = [(v, i), top[0], top[1]];
                    } else if v > top[1].0 {
                        top = [top[0], (v, i), top[1]];
                    } else if v > top[2].0 {
                        top[2] = (v, i);
                    }
                }
                top
            })
            .collect();
        *self.spent += (self.load.len() * self.count.len()) as u64;
    }

    fn out_of_budget(&self) -> bool {
        *self.spent >= BUDGET
    }

    /// (worst efficiency, soft maximum at power p) were x to go from its shard to `to`, and y
    /// (if any) from `to` to x's shard.
    fn judge(&mut self, x: usize, y: Option<usize>, to: usize, p: i32) -> (f64, f64) {
        let from = self.shard_of[x];
        let (mut worst, mut soft) = (0.0f64, 0.0);
        for (a, f) in self.family.iter().enumerate() {
            let d = f[x] - y.map_or(0.0, |y| f[y]);
            let (lf, lt) = (self.load[a][from] - d, self.load[a][to] + d);
            let other = self.top[a]
                .iter()
                .find(|(_, i)| *i != from && *i != to)
                .map_or(0.0, |(v, _)| *v);
            let s = lf.max(lt).max(other) / self.ideal[a];
            worst = worst.max(s);
            soft += s.powi(p);
        }
        *self.spent += self.family.len() as u64;
        (1.0 / worst, soft)
    }

    fn score(&self, p: i32) -> (f64, f64) {
        let (mut worst, mut soft) = (0.0f64, 0.0);
        for (top, ideal) in self.top.iter().zip(&self.ideal) {
            let s = top[0].0 / ideal;
            worst = worst.max(s);
            soft += s.powi(p);
        }
        (1.0 / worst, soft)
    }

    fn worst(&self) -> f64 {
        self.score(1).0
    }

    fn apply(&mut self, x: usize, y: Option<usize>, to: usize) {
        let from = self.shard_of[x];
        for (f, l) in self.family.iter().zip(&mut self.load) {
            let d = f[x] - y.map_or(0.0, |y| f[y]);
            l[from] -= d;
            l[to] += d;
        }
        self.shard_of[x] = to;
        if let Some(y) = y {
            self.shard_of[y] = from;
        } else {
            self.count[from] -= 1;
            self.count[to] += 1;
        }
        self.rank();
    }

    /// Every move and swap, first improvement of the soft maximum at power p taken, until none
    /// improves it.
    fn descend(&mut self, p: i32) {
        let (n, k) = (self.shard_of.len(), self.count.len());
        let mut now = self.score(p).1;
        loop {
            let mut improved = false;
            for x in 0..n {
                for to in 0..k {
                    if self.out_of_budget() {
                        return;
                    }
                    if to == self.shard_of[x] || self.count[self.shard_of[x]] < 2 {
                        continue;
                    }
                    let (_, soft) = self.judge(x, None, to, p);
                    if soft < now * (1.0 - 1e-9) {
                        self.apply(x, None, to);
                        now = soft;
                        improved = true;
                    }
                }
            }
            for x in 0..n {
                for y in x + 1..n {
                    if self.out_of_budget() {
                        return;
                    }
                    let to = self.shard_of[y];
                    if to == self.shard_of[x] {
                        continue;
                    }
                    let (_, soft) = self.judge(x, Some(y), to, p);
                    if soft < now * (1.0 - 1e-9) {
                        self.apply(x, Some(y), to);
                        now = soft;
                        improved = true;
                    }
                }
            }
            if !improved {
                return;
            }
        }
    }

    /// Moves and swaps out of the worst profile's fullest shard, while one raises the worst
    /// efficiency or keeps it and lowers the soft maximum.
    fn polish(&mut self) {
        let (n, k) = (self.shard_of.len(), self.count.len());
        'search: while !self.out_of_budget() {
            let now = self.score(POLISH);
            let a = (0..self.top.len())
                .max_by(|&a, &b| {
                    let s = |a: usize| self.top[a][0].0 / self.ideal[a];
                    s(a).total_cmp(&s(b)).then(b.cmp(&a))
                })
                .unwrap_or(0);
            let from = self.top[a][0].1;
            let mine: Vec<usize> = (0..n).filter(|&j| self.shard_of[j] == from).collect();
            if mine.len() > 1 {
                for &x in &mine {
                    for to in (0..k).filter(|&t| t != from) {
                        if better(self.judge(x, None, to, POLISH), now) {
                            self.apply(x, None, to);
                            continue 'search;
                        }
                    }
                }
            }
            for &x in &mine {
                for y in 0..n {
                    if self.out_of_budget() {
                        return;
                    }
                    let to = self.shard_of[y];
                    if to == from || self.family[a][y] >= self.family[a][x] {
                        continue;
                    }
                    if better(self.judge(x, Some(y), to, POLISH), now) {
                        self.apply(x, Some(y), to);
                        continue 'search;
                    }
                }
            }
            return;
        }
    }
}

/// Whether `new` is better than `old`: a higher worst efficiency, or the same and a lower soft
/// maximum (relative tolerances, so that rounding cannot make the search go round in circles).
fn better(new: (f64, f64), old: (f64, f64)) -> bool {
    new.0 > old.0 * (1.0 + 1e-12)
        || (new.0 >= old.0 * (1.0 - 1e-12) && new.1 < old.1 * (1.0 - 1e-9))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench's 53 [M, N, K] shapes (tests/bench/bench_balance.py).
    fn bench_products() -> Vec<f64> {
        let nk = [
            (4096, 4096),
            (3584, 18944),
            (18944, 3584),
            (3584, 3584),
            (1024, 1024),
            (8192, 8192),
            (2048, 512),
            (5120, 13824),
        ];
        let ms = [1, 16, 128, 1024, 4096, 8192, 16384];
        nk.iter()
            .flat_map(|&(n, k)| ms.iter().map(move |&m| f64::from(m * n) * f64::from(k)))
            .take(53)
            .collect()
    }

    fn worst(products: &[f64], shard_of: &[usize], k: usize) -> f64 {
        let family = profiles(products);
        let mut spent = 0;
        Search::new(&family, shard_of.to_vec(), k, &mut spent).worst()
    }

    #[test]
    fn the_worst_profile_of_the_family_gets_at_least_085_where_lpt_by_the_product_does_not() {
        let p = bench_products();
        let mean = p.iter().sum::<f64>() / p.len() as f64;
        let product: Vec<f64> = p.iter().map(|x| 1.0 + x / mean).collect();
        let mut product_worst = 1.0f64;
        for k in [4, 8] {
            let robust = worst(&p, &assign(&p, k), k);
            let by_product = worst(&p, &lpt(&product, k), k);
            assert!(
                robust >= 0.85 && robust > by_product,
                "k={k}: {robust} {by_product}"
            );
            product_worst = product_worst.min(by_product);
        }
        assert!(product_worst < 0.85, "{product_worst}");
    }

    #[test]
    fn the_family_holds_the_powers_and_the_rank_tails() {
        let family = profiles(&[1.0, 4.0, 4.0, 9.0]);
        assert_eq!(family.len(), EXPONENTS.len() + TAILS.len());
        for f in &family {
            assert!((f.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{f:?}");
        }
        let tail = &family[EXPONENTS.len() + 1];
        assert!(
            tail[0] < tail[1] && tail[1] == tail[2] && tail[2] < tail[3],
            "{tail:?}"
        );
        assert!((probit(0.975) - 1.959964).abs() < 1e-6);
        assert!((probit(0.01) + 2.326348).abs() < 1e-6);
        assert!(probit(0.5).abs() < 1e-12);
    }

    #[test]
    fn every_shard_gets_a_shape_and_the_split_is_the_same_every_time() {
        let p: Vec<f64> = (1..=40).map(|j| f64::from(j * j % 17 + 1)).collect();
        let first = assign(&p, 6);
        assert_eq!(first, assign(&p, 6));
        for i in 0..6 {
            assert!(first.contains(&i), "shard {i} is empty: {first:?}");
        }
        assert_eq!(assign(&p[..3], 5), vec![0, 1, 2]);
    }

    #[test]
    fn zero_and_equal_products_still_split_evenly() {
        let shard_of = assign(&[0.0; 8], 4);
        let mut counts = [0; 4];
        for i in shard_of {
            counts[i] += 1;
        }
        assert_eq!(counts, [2; 4]);
        let shares = mean_shares(&[1.0, 1.0, 1.0]);
        assert!(shares.iter().all(|s| (s - 1.0).abs() < 1e-12), "{shares:?}");
    }
}
