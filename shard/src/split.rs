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
    let (key, id) = find_entry(&doc, &mut schema, name, op, entry)?;
    let found = Entry::read(&doc, &mut schema, name, describe_entry(op, entry), key, id)?;
    let total = found.items.len();
    let k = shards.min(total);
    if k < 2 {
        return Ok(Split {
            total,
            pieces: Vec::new(),
            shapes: Vec::new(),
            costs: None,
        });
    }
    found.check_size(k)?;
    let infos = strategy::describe(&mut schema, found.items);
    let cut = balance.assign(op, &infos, k);
    let pieces = cut
        .groups
        .into_iter()
        .enumerate()
        .map(|(i, picked)| found.piece(i, k, source, picked))
        .collect();
    Ok(Split {
        total,
        pieces,
        shapes: infos,
        costs: cut.costs,
    })
}

/// The op's entry in the document: its key's node and its value's; an error where the top level
/// is not a mapping or has no such key.
fn find_entry(
    doc: &Doc,
    schema: &mut Schema<'_>,
    name: &str,
    op: &str,
    entry: Option<&str>,
) -> Result<(NodeId, NodeId)> {
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
    match top
        .iter()
        .find(|(k, _, _)| *k == Key::Str(wanted.to_owned()))
    {
        Some(&(_, key, id)) => Ok((key, id)),
        None => Err(missing_entry(doc, &top, name, op, entry)),
    }
}

/// How messages and the shard files' comments name the entry: `op "mm"`, or
/// `entry "BlasBenchmark" (op "mm")` where `--entry` names another key.
fn describe_entry(op: &str, entry: Option<&str>) -> String {
    match entry {
        Some(e) if e != op => format!("entry {e:?} (op {op:?})"),
        _ => format!("op {op:?}"),
    }
}

/// The op's entry, checked to be one shard files can be written from: a mapping with a
/// `shapes` list and no recursive structure.
struct Entry<'d> {
    doc: &'d Doc,
    /// How errors name the shape file.
    name: &'d str,
    /// How messages and comments name the entry ([`describe_entry`]).
    what: String,
    /// The entry's key node, kept as each shard file's key.
    key: NodeId,
    /// The entry's value node.
    id: NodeId,
    /// The entry's pairs, key and value nodes, in order.
    pairs: Vec<(NodeId, NodeId)>,
    /// Where the `shapes` pair is among `pairs`.
    shapes_at: usize,
    /// The `shapes` list's items.
    items: &'d [NodeId],
}

impl<'d> Entry<'d> {
    /// The entry whose key is `key` and value `id`; an error naming what keeps shard files from
    /// being written from it.
    fn read(
        doc: &'d Doc,
        schema: &mut Schema<'_>,
        name: &'d str,
        what: String,
        key: NodeId,
        id: NodeId,
    ) -> Result<Entry<'d>> {
        let node = &doc.nodes[id];
        if !matches!(node.kind, Kind::Map(_)) || node.tag != tag::MAP {
            return Err(doc.error_at(
                name,
                id,
                format!("{what} is not a mapping: give it a \"shapes\" list"),
            ));
        }
        let pairs = schema.dict_any_pyyaml(id)?;
        let Some(shapes_at) = pairs.iter().position(|(k, _, _)| is_shapes(k)) else {
            return Err(doc.error_at(name, id, format!("{what} has no \"shapes\" list: add one")));
        };
        let shapes = pairs[shapes_at].2;
        let Kind::Seq(items) = &doc.nodes[shapes].kind else {
            return Err(doc.error_at(
                name,
                shapes,
                format!("{what}: \"shapes\" is not a list: make it a list of shapes"),
            ));
        };
        if doc.reaches_cycle[id] {
            return Err(doc.error_at(
                name,
                id,
                format!("{what} holds a recursive structure (an alias inside the collection it names): PyYAML reads it, but no shard file can write it out; replace that alias with a copy of the data it stands for"),
            ));
        }
        Ok(Entry {
            doc,
            name,
            what,
            key,
            id,
            pairs: pairs.iter().map(|&(_, k, v)| (k, v)).collect(),
            shapes_at,
            items,
        })
    }

    /// Refuses an entry whose `k` shard files would expand to more than [`MAX_NODES`] nodes once
    /// aliases are written out: each shard file repeats the entry's other pairs.
    fn check_size(&self, k: usize) -> Result<()> {
        let doc = self.doc;
        let mut memo = vec![None; doc.nodes.len()];
        let mut siblings = 0u64;
        for (i, &(key, value)) in self.pairs.iter().enumerate() {
            siblings = siblings.saturating_add(expanded_size(doc, key, &mut memo));
            if i != self.shapes_at {
                siblings = siblings.saturating_add(expanded_size(doc, value, &mut memo));
            }
        }
        let all_shapes = expanded_size(doc, self.pairs[self.shapes_at].1, &mut memo);
        if siblings.saturating_mul(k as u64).saturating_add(all_shapes) > MAX_NODES {
            return Err(doc.error_at(
                self.name,
                self.id,
                format!("{} expands to more than {MAX_NODES} nodes once aliases are written out: refusing", self.what),
            ));
        }
        Ok(())
    }

    /// Shard `i` of `k`, holding the shapes at `picked`, written out with a comment naming
    /// `source` and its first shapes.
    fn piece(&self, i: usize, k: usize, source: &str, picked: Vec<usize>) -> Piece {
        let mut listed: Vec<String> = picked.iter().take(3).map(usize::to_string).collect();
        if picked.len() > 3 {
            listed.push("...".to_owned());
        }
        let comment = format!(
            "# shard {i} of {k}: {} from {source} (shapes {})",
            self.what.replace('"', ""),
            listed.join(", ")
        );
        let items: Vec<NodeId> = picked.iter().map(|&j| self.items[j]).collect();
        let text = shape_file::shard_file(
            self.doc,
            &comment,
            self.key,
            &self.pairs,
            self.shapes_at,
            &items,
        );
        Piece {
            shapes: picked,
            text,
        }
    }
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
