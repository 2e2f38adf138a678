//! Which shapes go to which shard: round-robin (the plugin's way, the default), or LPT (largest
//! expected cost first, each onto the shard with the least expected cost so far), and where the
//! expected costs come from: a cost file of measured seconds (given, or kept with the records:
//! `protocol::history`), else a cost model. Where nothing was measured the default is `robust`,
//! the split that holds up over a family of profiles (`robust`), not LPT by one guessed model.
//!
//! Costs are assumed to add up: a shard is expected to take the sum of its shapes' costs, which
//! holds once nothing is shared between shapes of one process (see warmup-costs' `measure` for what a
//! shared compile does to measured costs).

use crate::flags::TOOL;
pub use crate::flags::{Model, Strategy};
use crate::robust;
use crate::shape;
use protocol::costs::CostFile;
use pyyaml::{NodeId, Schema};
use std::cmp::Ordering;

/// What the strategy knows of one shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeInfo {
    /// The shape's text (see [`shape::text`]); `None` when JSON cannot hold it.
    pub text: Option<String>,
    /// The product of its numbers (see [`shape::product`]).
    pub product: f64,
}

/// Each shape's text and product.
pub fn describe(schema: &mut Schema<'_>, items: &[NodeId]) -> Vec<ShapeInfo> {
    items
        .iter()
        .map(|&id| ShapeInfo {
            text: shape::text(schema, id),
            product: shape::product(schema, id),
        })
        .collect()
}

/// The strategy with its cost source, as the command line chose them.
#[derive(Debug)]
pub struct Balance {
    pub strategy: Strategy,
    /// Measured costs; shapes the file lacks get the median of the op's shapes it has.
    pub costs: Option<CostFile>,
    /// The model where there is no cost file; `None` with round-robin: no costs at all.
    pub model: Option<Model>,
    /// Under [`Model::Product`]: every shape's fixed cost, in units of the op's mean product.
    pub overhead: f64,
}

/// Expected costs per shape, and where they came from (`file`, `uniform`, `product`).
#[derive(Debug, Clone, PartialEq)]
pub struct Costs {
    pub source: &'static str,
    pub per_shape: Vec<f64>,
}

/// The shards: each one's shapes (source positions, ascending), longest expected first under LPT.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    pub groups: Vec<Vec<usize>>,
    pub costs: Option<Costs>,
}

impl Balance {
    /// Round-robin with no costs: what warmup-shard did before it knew of costs.
    pub fn round_robin() -> Balance {
        Balance {
            strategy: Strategy::RoundRobin,
            costs: None,
            model: None,
            overhead: 0.0,
        }
    }

    /// Cuts `shapes` of `op` into `k` shards (`2 <= k <= shapes.len()`).
    pub fn assign(&self, op: &str, shapes: &[ShapeInfo], k: usize) -> Assignment {
        let costs = self.costs(op, shapes);
        let groups = match (&self.strategy, &costs) {
            (Strategy::Lpt, Some(c)) if c.source == Model::Robust.name() => {
                let products: Vec<f64> = shapes.iter().map(|s| s.product).collect();
                in_shards(&robust::assign(&products, k), &c.per_shape, k)
            }
            (Strategy::Lpt, Some(c)) => lpt(&c.per_shape, k),
            _ => (0..k)
                .map(|i| (i..shapes.len()).step_by(k).collect())
                .collect(),
        };
        Assignment { groups, costs }
    }

    fn costs(&self, op: &str, shapes: &[ShapeInfo]) -> Option<Costs> {
        if let Some(file) = &self.costs {
            if let Some(costs) = from_file(file, op, shapes) {
                return Some(costs);
            }
        }
        let model = match self.model {
            Some(m) => m,
            None if self.strategy == Strategy::Lpt || self.costs.is_some() => Model::Robust,
            None => return None,
        };
        Some(Costs {
            source: model.name(),
            per_shape: modelled(model, self.overhead, shapes),
        })
    }
}

/// The file's costs for the op's shapes, the median of those it has for the rest; `None`
/// (after saying so) when it has none of them.
fn from_file(file: &CostFile, op: &str, shapes: &[ShapeInfo]) -> Option<Costs> {
    let known = file.costs(op);
    let found: Vec<Option<f64>> = shapes
        .iter()
        .map(|s| s.text.as_deref().and_then(|t| known.get(t).copied()))
        .collect();
    let mut present: Vec<f64> = found.iter().flatten().copied().collect();
    let name = file.path().display();
    if present.is_empty() {
        eprintln!(
            "{TOOL}: {name} has no cost for any of op {op:?}'s {} shapes: using the cost model",
            shapes.len()
        );
        return None;
    }
    present.sort_by(f64::total_cmp);
    let n = present.len();
    let median = if n % 2 == 1 {
        present[n / 2]
    } else {
        (present[n / 2 - 1] + present[n / 2]) / 2.0
    };
    let missing = shapes.len() - n;
    if missing > 0 {
        eprintln!(
            "{TOOL}: {name} has no cost for {missing} of op {op:?}'s {} shapes: they get the median of the others, {median:.3} s",
            shapes.len()
        );
    }
    Some(Costs {
        source: "file",
        per_shape: found.into_iter().map(|c| c.unwrap_or(median)).collect(),
    })
}

/// A model's cost of each shape: `uniform` 1 each; `product` overhead + product / mean product;
/// `robust` the shape's mean share of the family's profiles, in units of the mean shape.
fn modelled(model: Model, overhead: f64, shapes: &[ShapeInfo]) -> Vec<f64> {
    match model {
        Model::Uniform => vec![1.0; shapes.len()],
        Model::Robust => {
            let products: Vec<f64> = shapes.iter().map(|s| s.product.min(1e300)).collect();
            robust::mean_shares(&products)
        }
        Model::Product => {
            // Clamped so that a sum of huge products stays finite.
            let p = |s: &ShapeInfo| s.product.min(1e300);
            let n = shapes.len().max(1) as f64;
            let mut mean = shapes.iter().map(p).sum::<f64>() / n;
            if !mean.is_finite() {
                // Many products near the clamp: summed as shares, which cannot overflow.
                mean = shapes.iter().map(|s| p(s) / n).sum::<f64>();
            }
            shapes
                .iter()
                .map(|s| overhead + if mean > 0.0 { p(s) / mean } else { 0.0 })
                .collect()
        }
    }
}

/// Longest processing time first: shapes by cost, largest first (earlier in the source on a
/// tie), each onto the shard with the least cost so far (then the fewest shapes, then the lowest
/// index, so no shard stays empty). Shards come back largest expected first, each one's shapes in
/// source order.
pub fn lpt(costs: &[f64], k: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]).then(a.cmp(&b)));
    let mut bins: Vec<(f64, Vec<usize>)> = vec![(0.0, Vec::new()); k];
    for j in order {
        let least = (0..k)
            .min_by(|&a, &b| {
                bins[a]
                    .0
                    .total_cmp(&bins[b].0)
                    .then(bins[a].1.len().cmp(&bins[b].1.len()))
                    .then(a.cmp(&b))
            })
            .unwrap_or(0);
        bins[least].0 += costs[j];
        bins[least].1.push(j);
    }
    ordered(bins)
}

/// The shards of a split given as each shape's shard, ordered as [`lpt`] orders them.
fn in_shards(shard_of: &[usize], costs: &[f64], k: usize) -> Vec<Vec<usize>> {
    let mut bins: Vec<(f64, Vec<usize>)> = vec![(0.0, Vec::new()); k];
    for (j, &i) in shard_of.iter().enumerate() {
        bins[i].0 += costs[j];
        bins[i].1.push(j);
    }
    ordered(bins)
}

/// Largest expected first (then by first shape), each shard's shapes in source order.
fn ordered(mut bins: Vec<(f64, Vec<usize>)>) -> Vec<Vec<usize>> {
    for bin in &mut bins {
        bin.1.sort_unstable();
    }
    bins.sort_by(|a, b| match b.0.total_cmp(&a.0) {
        Ordering::Equal => a.1.first().cmp(&b.1.first()),
        other => other,
    });
    bins.into_iter().map(|(_, shapes)| shapes).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn info(texts: &[&str], products: &[f64]) -> Vec<ShapeInfo> {
        texts
            .iter()
            .zip(products)
            .map(|(t, &p)| ShapeInfo {
                text: Some((*t).to_owned()),
                product: p,
            })
            .collect()
    }

    fn load(json: &str) -> CostFile {
        CostFile::parse(Path::new("c.json"), json).expect("valid cost file")
    }

    /// `strategy` by the cost file `json`, `model` where it has none of the op's shapes.
    fn by_file(strategy: Strategy, json: &str, model: Option<Model>) -> Balance {
        Balance {
            strategy,
            costs: Some(load(json)),
            model,
            overhead: 1.0,
        }
    }

    fn loads(groups: &[Vec<usize>], costs: &[f64]) -> Vec<f64> {
        groups
            .iter()
            .map(|g| g.iter().map(|&j| costs[j]).sum())
            .collect()
    }

    #[test]
    fn lpt_evens_out_the_loads_where_round_robin_does_not() {
        let costs = [1.0, 9.0, 2.0, 3.0, 4.0];
        let groups = lpt(&costs, 2);
        assert_eq!(groups, vec![vec![0, 1], vec![2, 3, 4]]);
        assert_eq!(loads(&groups, &costs), vec![10.0, 9.0]);
        let rr: Vec<Vec<usize>> = vec![vec![0, 2, 4], vec![1, 3]];
        assert_eq!(loads(&rr, &costs), vec![7.0, 12.0]);
    }

    #[test]
    fn lpt_shards_come_largest_first_and_none_is_empty_even_at_zero_cost() {
        let groups = lpt(&[0.0; 5], 5);
        assert!(groups.iter().all(|g| g.len() == 1), "{groups:?}");
        let costs = [1.0, 5.0, 3.0];
        assert_eq!(lpt(&costs, 3), vec![vec![1], vec![2], vec![0]]);
    }

    #[test]
    fn round_robin_is_the_default_and_has_no_costs() {
        let shapes = info(&["[1]", "[2]", "[3]"], &[1.0, 2.0, 3.0]);
        let a = Balance::round_robin().assign("mm", &shapes, 2);
        assert_eq!(a.groups, vec![vec![0, 2], vec![1]]);
        assert_eq!(a.costs, None);
    }

    #[test]
    fn lpt_by_the_cost_file_gives_missing_shapes_the_median() {
        let shapes = info(&["[1]", "[2]", "[3]", "[4]"], &[1.0; 4]);
        let balance = by_file(
            Strategy::Lpt,
            r#"{"mm": {"[1]": 8, "[2]": 1, "[3]": 2, "[9]": 100}}"#,
            None,
        );
        let a = balance.assign("mm", &shapes, 2);
        let costs = a.costs.expect("costs");
        assert_eq!(costs.source, "file");
        assert_eq!(costs.per_shape, vec![8.0, 1.0, 2.0, 2.0]);
        assert_eq!(a.groups, vec![vec![0], vec![1, 2, 3]]);
    }

    #[test]
    fn a_cost_file_without_the_op_falls_back_to_the_model() {
        let shapes = info(&["[1]", "[3]"], &[1.0, 3.0]);
        let balance = by_file(
            Strategy::Lpt,
            r#"{"bmm": {"[1]": 8}}"#,
            Some(Model::Uniform),
        );
        let costs = balance.assign("mm", &shapes, 2).costs.expect("costs");
        assert_eq!((costs.source, costs.per_shape), ("uniform", vec![1.0, 1.0]));
    }

    #[test]
    fn the_product_model_is_relative_to_the_mean_plus_the_overhead() {
        let shapes = info(&["a", "b", "c"], &[1.0, 2.0, 3.0]);
        assert_eq!(modelled(Model::Product, 0.5, &shapes), vec![1.0, 1.5, 2.0]);
        assert_eq!(
            modelled(Model::Product, 0.0, &info(&["a"], &[0.0])),
            vec![0.0]
        );
        assert_eq!(modelled(Model::Uniform, 9.0, &shapes), vec![1.0; 3]);
    }

    #[test]
    fn huge_products_and_huge_file_costs_keep_every_sum_finite() {
        let shapes = info(&["a"; 400], &[f64::INFINITY; 400]);
        let costs = modelled(Model::Product, 1e12, &shapes);
        assert!(costs.iter().all(|c| *c == 1e12 + 1.0), "{:?}", &costs[..2]);
        let shapes = info(&["[1]", "[2]", "[3]"], &[1.0; 3]);
        let balance = by_file(
            Strategy::Lpt,
            r#"{"mm": {"[1]": 1e12, "[2]": 1e12, "[3]": 1e12}}"#,
            None,
        );
        let a = balance.assign("mm", &shapes, 2);
        let sum: f64 = a.costs.expect("costs").per_shape.iter().sum();
        assert!(sum.is_finite() && sum == 3e12, "{sum}");
    }

    #[test]
    fn round_robin_with_costs_keeps_its_cut_and_records_the_costs() {
        let shapes = info(&["[1]", "[2]", "[3]"], &[1.0, 1.0, 1.0]);
        let balance = by_file(
            Strategy::RoundRobin,
            r#"{"mm": {"[1]": 4, "[2]": 1, "[3]": 2}}"#,
            None,
        );
        let a = balance.assign("mm", &shapes, 2);
        assert_eq!(a.groups, vec![vec![0, 2], vec![1]]);
        assert_eq!(a.costs.expect("costs").per_shape, vec![4.0, 1.0, 2.0]);
    }
}
