//! The split for when nothing was measured: shapes whose cost is known only to grow with their
//! size, by an unknown power. LPT by any one model (the product, its square root) balances the
//! profiles near that model and falls apart on the others: by the product, the largest products
//! get shards of their own and the rest pile up, which is 0.47 of ideal at 8 shards when costs are
//! uniform after all. This module picks the split whose worst efficiency over a family of
//! profiles is best (docs/CONTRACT.md, warmup-shard's `robust` model):
//!
//! - the family: cost = P^a for each a in [`EXPONENTS`] (P the shape's product of numbers);
//! - candidates: LPT by P^b for b in [`CANDIDATES`], and LPT by each shape's mean share of the
//!   family's profiles; the one with the best worst efficiency is kept;
//! - then single moves and swaps out of the worst profile's fullest shard, accepted when they
//!   raise the worst efficiency, or keep it and lower `sum (makespan / ideal)^16` over the
//!   family (so that a tie on the worst profile does not stop the search), up to a fixed budget
//!   of work, so the result is deterministic and thousands of shapes stay fast.
//!
//! Efficiency under a profile = ideal / makespan, ideal = max(total / k, largest shape).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The exponents a of the profiles cost = P^a the split is judged by.
pub const EXPONENTS: [f64; 7] = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5];
/// The exponents b of the LPT candidates (LPT by P^b).
const CANDIDATES: [f64; 16] = [
    0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5,
];
/// The soft maximum's power: large enough that the worst profile dominates the sum.
const SOFT: i32 = 16;
/// Profile-shard load updates the improvement may spend (about a second at most, in release).
const BUDGET: u64 = 200_000_000;

/// The family's profiles for these products, each scaled to sum to 1 (a profile that sums to 0,
/// every product 0 at a > 0, is left out).
pub fn profiles(products: &[f64]) -> Vec<Vec<f64>> {
    let top = products.iter().copied().fold(0.0, f64::max);
    let ratio: Vec<f64> = products
        .iter()
        .map(|&p| if top > 0.0 { p / top } else { 0.0 })
        .collect();
    EXPONENTS
        .iter()
        .filter_map(|&a| {
            let raw: Vec<f64> = ratio.iter().map(|r| r.powf(a)).collect();
            let sum: f64 = raw.iter().sum();
            (sum > 0.0).then(|| raw.into_iter().map(|c| c / sum).collect())
        })
        .collect()
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
    let mut best: Option<(f64, Vec<usize>)> = None;
    let mut consider = |shard_of: Vec<usize>| {
        let worst = Loads::new(&family, &shard_of, k).worst();
        if best.as_ref().is_none_or(|(w, _)| worst > *w) {
            best = Some((worst, shard_of));
        }
    };
    for b in CANDIDATES {
        let weights: Vec<f64> = products
            .iter()
            .map(|&p| if top > 0.0 { (p / top).powf(b) } else { 1.0 })
            .collect();
        consider(lpt(&weights, k));
    }
    consider(lpt(&mean_shares(products), k));
    let Some((_, shard_of)) = best else {
        return lpt(&vec![1.0; n], k);
    };
    improve(&family, shard_of, k)
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

/// Each profile's load per shard, and its ideal.
struct Loads<'a> {
    family: &'a [Vec<f64>],
    load: Vec<Vec<f64>>,
    ideal: Vec<f64>,
}

impl<'a> Loads<'a> {
    fn new(family: &'a [Vec<f64>], shard_of: &[usize], k: usize) -> Loads<'a> {
        let mut load = vec![vec![0.0; k]; family.len()];
        for (f, l) in family.iter().zip(&mut load) {
            for (j, &i) in shard_of.iter().enumerate() {
                l[i] += f[j];
            }
        }
        let ideal = family
            .iter()
            .map(|f| f.iter().copied().fold(1.0 / k as f64, f64::max))
            .collect();
        Loads {
            family,
            load,
            ideal,
        }
    }

    /// Each profile's makespan / ideal (the inverse of its efficiency).
    fn stretch(&self) -> impl Iterator<Item = f64> + '_ {
        self.load
            .iter()
            .zip(&self.ideal)
            .map(|(l, ideal)| l.iter().copied().fold(0.0, f64::max) / ideal)
    }

    /// The worst efficiency over the family.
    fn worst(&self) -> f64 {
        1.0 / self.stretch().fold(0.0, f64::max)
    }

    /// (worst efficiency, soft maximum of the stretches): what a change is judged by.
    fn score(&self) -> (f64, f64) {
        let (mut worst, mut soft) = (0.0f64, 0.0);
        for s in self.stretch() {
            worst = worst.max(s);
            soft += s.powi(SOFT);
        }
        (1.0 / worst, soft)
    }

    /// Shape x leaves shard `from` for `to`, and shape y (if any) goes the other way.
    fn exchange(&mut self, x: usize, y: Option<usize>, from: usize, to: usize) {
        for (f, l) in self.family.iter().zip(&mut self.load) {
            let d = f[x] - y.map_or(0.0, |y| f[y]);
            l[from] -= d;
            l[to] += d;
        }
    }

    /// The profile of the worst efficiency and its fullest shard.
    fn bottleneck(&self) -> (usize, usize) {
        let a = (0..self.load.len())
            .max_by(|&a, &b| {
                let s = |a: usize| self.load[a].iter().copied().fold(0.0, f64::max) / self.ideal[a];
                s(a).total_cmp(&s(b)).then(b.cmp(&a))
            })
            .unwrap_or(0);
        let l = &self.load[a];
        let i = (0..l.len())
            .max_by(|&x, &y| l[x].total_cmp(&l[y]).then(y.cmp(&x)))
            .unwrap_or(0);
        (a, i)
    }
}

/// Whether `new` is better than `old`: a higher worst efficiency, or the same and a lower soft
/// maximum (relative tolerances, so that rounding cannot make the search go round in circles).
fn better(new: (f64, f64), old: (f64, f64)) -> bool {
    new.0 > old.0 * (1.0 + 1e-12)
        || (new.0 >= old.0 * (1.0 - 1e-12) && new.1 < old.1 * (1.0 - 1e-9))
}

/// Single moves, then swaps, out of the worst profile's fullest shard, first improvement taken,
/// until none improves or the budget is spent.
fn improve(family: &[Vec<f64>], mut shard_of: Vec<usize>, k: usize) -> Vec<usize> {
    let n = shard_of.len();
    let mut loads = Loads::new(family, &shard_of, k);
    let mut now = loads.score();
    let per_try = (family.len() * (k + 2)) as u64;
    let mut spent = 0u64;
    'search: while spent < BUDGET {
        let (a, from) = loads.bottleneck();
        let mine: Vec<usize> = (0..n).filter(|&j| shard_of[j] == from).collect();
        if mine.len() > 1 {
            for &x in &mine {
                for to in (0..k).filter(|&t| t != from) {
                    spent += per_try;
                    loads.exchange(x, None, from, to);
                    let tried = loads.score();
                    if better(tried, now) {
                        now = tried;
                        shard_of[x] = to;
                        continue 'search;
                    }
                    loads.exchange(x, None, to, from);
                }
            }
        }
        for &x in &mine {
            for y in (0..n).filter(|&y| shard_of[y] != from && family[a][y] < family[a][x]) {
                if spent >= BUDGET {
                    break 'search;
                }
                spent += per_try;
                let to = shard_of[y];
                loads.exchange(x, Some(y), from, to);
                let tried = loads.score();
                if better(tried, now) {
                    now = tried;
                    shard_of[x] = to;
                    shard_of[y] = from;
                    continue 'search;
                }
                loads.exchange(x, Some(y), to, from);
            }
        }
        break;
    }
    shard_of
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
        Loads::new(&profiles(products), shard_of, k).worst()
    }

    #[test]
    fn the_worst_profile_of_the_family_gets_at_least_085_where_lpt_by_the_product_does_not() {
        let p = bench_products();
        let mean = p.iter().sum::<f64>() / p.len() as f64;
        let product: Vec<f64> = p.iter().map(|x| 1.0 + x / mean).collect();
        for k in [4, 8] {
            let robust = worst(&p, &assign(&p, k), k);
            let by_product = worst(&p, &lpt(&product, k), k);
            assert!(robust >= 0.85, "k={k}: {robust}");
            assert!(by_product < robust, "k={k}: {by_product} vs {robust}");
        }
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
        assert_eq!(profiles(&[0.0, 0.0]).len(), 1); // only a = 0: every shape alike
        let shard_of = assign(&[0.0; 8], 4);
        let mut counts = [0; 4];
        for i in shard_of {
            counts[i] += 1;
        }
        assert_eq!(counts, [2; 4]);
        let shares = mean_shares(&[1.0, 1.0, 1.0]);
        assert!(shares.iter().all(|s| (s - 1.0).abs() < 1e-12), "{shares:?}");
    }

    #[test]
    fn thousands_of_shapes_stay_within_the_budget_and_balanced() {
        let p: Vec<f64> = (0..3000u32)
            .map(|j| f64::from((j * 7919) % 4093 + 1).powi(3))
            .collect();
        let shard_of = assign(&p, 8);
        assert!(worst(&p, &shard_of, 8) > 0.95);
    }
}
