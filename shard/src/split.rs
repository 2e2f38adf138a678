//! One entry's shapes cut into shards (by the strategy in `strategy`), each rendered as a complete
//! shape file in memory, so that nothing is written unless every shard could be built.

use crate::shape_file::{self, MAX_NODES};
use crate::strategy::{self, Balance, Costs, ShapeInfo};
use anyhow::Result;
use pyyaml::{expanded_size, tag, Doc, Key, Kind, NodeId, Schema};

/// One shard: which source shapes it holds and its shape file's text.
#[derive(Debug)]
pub struct Piece {
    pub shapes: Vec<usize>,
    pub text: String,
}

/// The outcome of cutting a shape file: how many shapes the op has, the shards (empty when
/// fewer than 2 shards would result), what the strategy knew of each shape and the expected costs
/// it used (both empty without shards).
#[derive(Debug)]
pub struct Split {
    pub total: usize,
    pub pieces: Vec<Piece>,
    pub shapes: Vec<ShapeInfo>,
    pub costs: Option<Costs>,
}

/// Cuts the shapes of one top-level entry of the shape file `bytes` into at most `shards`
/// shards, assigned as `balance` says. The entry is `entry` when given, else the op's own name; each shard file
/// keeps the entry's key, so the child finds its shapes where the benchmark looks for them.
///
/// `name` is how errors name the file; `source` and `op` go into each shard's leading comment.
pub fn split(
    bytes: &[u8],
    name: &str,
    source: &str,
    op: &str,
    entry: Option<&str>,
    shards: usize,
    balance: &Balance,
) -> Result<Split> {
    let doc = shape_file::load(bytes, name)?;
    let mut schema = Schema::new(&doc, name);
    schema.validate()?;
    let root = &doc.nodes[doc.root];
    if !matches!(root.kind, Kind::Map(_)) || root.tag != tag::MAP {
        return Err(doc.error_at(
            name,
            doc.root,
            "the top level is not a mapping of ops: a shape file maps each op name to its entry",
        ));
    }
    let top = schema.dict_any_pyyaml(doc.root)?;
    let wanted = entry.unwrap_or(op);
    let Some(&(_, entry_key, entry_id)) = top
        .iter()
        .find(|(k, _, _)| *k == Key::Str(wanted.to_owned()))
    else {
        return Err(missing_entry(&doc, &top, name, op, entry));
    };
    let what = match entry {
        Some(e) if e != op => format!("entry {e:?} (op {op:?})"),
        _ => format!("op {op:?}"),
    };
    let entry_node = &doc.nodes[entry_id];
    if !matches!(entry_node.kind, Kind::Map(_)) || entry_node.tag != tag::MAP {
        return Err(doc.error_at(
            name,
            entry_id,
            format!("{what} is not a mapping: give it a \"shapes\" list"),
        ));
    }
    let pairs = schema.dict_any_pyyaml(entry_id)?;
    let Some(shapes_at) = pairs.iter().position(|(k, _, _)| is_shapes(k)) else {
        return Err(doc.error_at(
            name,
            entry_id,
            format!("{what} has no \"shapes\" list: add one"),
        ));
    };
    let shapes = pairs[shapes_at].2;
    let Kind::Seq(items) = &doc.nodes[shapes].kind else {
        return Err(doc.error_at(
            name,
            shapes,
            format!("{what}: \"shapes\" is not a list: make it a list of shapes"),
        ));
    };
    if doc.reaches_cycle[entry_id] {
        return Err(doc.error_at(
            name,
            entry_id,
            format!("{what} holds a recursive structure (an alias inside the collection it names): PyYAML reads it, but no shard file can write it out; replace that alias with a copy of the data it stands for"),
        ));
    }
    let total = items.len();
    let k = shards.min(total);
    if k < 2 {
        return Ok(Split {
            total,
            pieces: Vec::new(),
            shapes: Vec::new(),
            costs: None,
        });
    }

    let mut memo = vec![None; doc.nodes.len()];
    let mut siblings = 0u64;
    for (i, &(_, key, value)) in pairs.iter().enumerate() {
        siblings = siblings.saturating_add(expanded_size(&doc, key, &mut memo));
        if i != shapes_at {
            siblings = siblings.saturating_add(expanded_size(&doc, value, &mut memo));
        }
    }
    let all_shapes = expanded_size(&doc, shapes, &mut memo);
    if siblings.saturating_mul(k as u64).saturating_add(all_shapes) > MAX_NODES {
        return Err(doc.error_at(
            name,
            entry_id,
            format!("{what} expands to more than {MAX_NODES} nodes once aliases are written out: refusing"),
        ));
    }

    let infos = strategy::describe(&mut schema, items);
    let cut = balance.assign(op, &infos, k);
    let pairs: Vec<(NodeId, NodeId)> = pairs.iter().map(|&(_, k, v)| (k, v)).collect();
    let pieces = cut
        .groups
        .into_iter()
        .enumerate()
        .map(|(i, picked)| {
            let mut listed: Vec<String> = picked.iter().take(3).map(usize::to_string).collect();
            if picked.len() > 3 {
                listed.push("...".to_owned());
            }
            let comment = format!(
                "# shard {i} of {k}: {} from {source} (shapes {})",
                what.replace('"', ""),
                listed.join(", ")
            );
            let items: Vec<NodeId> = picked.iter().map(|&j| items[j]).collect();
            let text = shape_file::shard_file(&doc, &comment, entry_key, &pairs, shapes_at, &items);
            Piece {
                shapes: picked,
                text,
            }
        })
        .collect();
    Ok(Split {
        total,
        pieces,
        shapes: infos,
        costs: cut.costs,
    })
}

/// No top-level key is the entry: list the keys there are, and say how to name the right one.
fn missing_entry(
    doc: &Doc,
    top: &[(Key, NodeId, NodeId)],
    name: &str,
    op: &str,
    entry: Option<&str>,
) -> anyhow::Error {
    let keys: Vec<String> = top
        .iter()
        .map(|&(_, k, _)| match &doc.nodes[k].kind {
            Kind::Scalar(v) => v.clone(),
            _ => "?".to_owned(),
        })
        .collect();
    const SHOWN: usize = 30;
    let mut listed = keys
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > SHOWN {
        listed.push_str(&format!(" and {} more", keys.len() - SHOWN));
    }
    if let Some(entry) = entry {
        return anyhow::anyhow!(
            "{name}: no top-level key {entry:?} (--entry) in this file (top-level keys: {listed}): pass --entry with the key the benchmark reads op {op:?}'s shapes from"
        );
    }
    // FlagGems' benchmarks look for a missing op under their benchmark class names.
    let example = keys
        .iter()
        .find(|k| k.ends_with("Benchmark"))
        .map_or("KEY", String::as_str);
    anyhow::anyhow!(
        "{name}: no op {op:?} in this file (top-level keys: {listed}): pass --op or set FLAGGEMS_PERF_CURRENT_OP to the op, or, where the benchmark finds the op's shapes under another key (FlagGems falls back to its benchmark class names), pass --entry {example}"
    )
}

fn is_shapes(key: &Key) -> bool {
    matches!(key, Key::Str(s) if s == "shapes")
}
