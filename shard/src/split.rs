//! The op's entry cut into shards (by the strategy in `strategy`), each rendered as a complete
//! shape file in memory, so that nothing is written unless every shard could be built.

use crate::emit::{expanded_size, Emitter, MAX_NODES};
use crate::resolve;
use crate::schema::{Key, Schema};
use crate::strategy::{self, Balance, Costs, ShapeInfo};
use crate::tree::{self, Kind, NodeId};
use anyhow::Result;

/// One shard: which source shapes it holds and its shape file's text.
#[derive(Debug)]
pub struct Piece {
    pub shapes: Vec<usize>,
    pub text: String,
}

/// The outcome of cutting a shape file: how many shapes the op has, and the shards (empty when
/// fewer than 2 shards would result), with what the strategy knew of each shape and expected.
#[derive(Debug)]
pub struct Split {
    pub total: usize,
    pub pieces: Vec<Piece>,
    pub shapes: Vec<ShapeInfo>,
    pub costs: Option<Costs>,
}

/// Cuts `op`'s shapes in the shape file `bytes` into at most `shards` round-robin shards.
///
/// `name` is how errors name the file; `source` goes into each shard's leading comment.
pub fn split(bytes: &[u8], name: &str, source: &str, op: &str, shards: usize) -> Result<Split> {
    split_with(bytes, name, source, op, shards, &Balance::round_robin())
}

/// [`split`], the shapes assigned to shards as `balance` says.
pub fn split_with(
    bytes: &[u8],
    name: &str,
    source: &str,
    op: &str,
    shards: usize,
    balance: &Balance,
) -> Result<Split> {
    let text = tree::prepare(bytes, name)?;
    let doc = tree::compose(&text, name)?;
    let mut schema = Schema::new(&doc, name);
    schema.validate()?;
    let root = doc.root;
    let root_node = &doc.nodes[root];
    if !matches!(root_node.kind, Kind::Map(_)) || root_node.tag != resolve::MAP {
        return Err(tree::at(
            name,
            root_node.line,
            root_node.col,
            "the top level is not a mapping of ops: a shape file maps each op name to its entry",
        ));
    }
    let top = schema.dict_any_pyyaml(root)?;
    let Some(&(_, op_key, entry)) = top.iter().find(|(k, _, _)| *k == Key::Str(op.to_owned()))
    else {
        let ops: Vec<String> = top
            .iter()
            .map(|&(_, k, _)| match &doc.nodes[k].kind {
                Kind::Scalar(v) => v.clone(),
                _ => "?".to_owned(),
            })
            .collect();
        anyhow::bail!(
            "{name}: no op {op:?} in this file (ops in this file: {}): pass --op or set FLAGGEMS_PERF_CURRENT_OP",
            ops.join(", ")
        );
    };
    let entry_node = &doc.nodes[entry];
    if !matches!(entry_node.kind, Kind::Map(_)) || entry_node.tag != resolve::MAP {
        return Err(tree::at(
            name,
            entry_node.line,
            entry_node.col,
            format!("op {op:?} is not a mapping: give it a \"shapes\" list"),
        ));
    }
    let pairs = schema.dict_any_pyyaml(entry)?;
    let Some(&(_, _, shapes)) = pairs.iter().find(|(k, _, _)| is_shapes(k)) else {
        return Err(tree::at(
            name,
            entry_node.line,
            entry_node.col,
            format!("op {op:?} has no \"shapes\" list: add one"),
        ));
    };
    let shapes_node = &doc.nodes[shapes];
    let Kind::Seq(items) = &shapes_node.kind else {
        return Err(tree::at(
            name,
            shapes_node.line,
            shapes_node.col,
            format!("op {op:?}: \"shapes\" is not a list: make it a list of shapes"),
        ));
    };
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
    for (id, key, value) in &pairs {
        siblings = siblings.saturating_add(expanded_size(&doc, *key, &mut memo));
        if !is_shapes(id) {
            siblings = siblings.saturating_add(expanded_size(&doc, *value, &mut memo));
        }
    }
    let all_shapes = expanded_size(&doc, shapes, &mut memo);
    if siblings.saturating_mul(k as u64).saturating_add(all_shapes) > MAX_NODES {
        return Err(tree::at(
            name,
            entry_node.line,
            entry_node.col,
            format!("op {op:?} expands to more than {MAX_NODES} nodes once aliases are written out: refusing"),
        ));
    }

    let infos = strategy::describe(&mut schema, items);
    let cut = balance.assign(op, &infos, k);
    let pieces = cut
        .groups
        .into_iter()
        .enumerate()
        .map(|(i, picked)| {
            let text = render(
                &schema, op, source, i, k, op_key, &pairs, shapes, items, &picked,
            );
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

#[allow(clippy::too_many_arguments)]
fn render(
    schema: &Schema<'_>,
    op: &str,
    source: &str,
    index: usize,
    k: usize,
    op_key: NodeId,
    pairs: &[(Key, NodeId, NodeId)],
    shapes: NodeId,
    items: &[NodeId],
    picked: &[usize],
) -> String {
    let doc = schema.doc;
    let mut e = Emitter::new(doc);
    let mut listed: Vec<String> = picked.iter().take(3).map(usize::to_string).collect();
    if picked.len() > 3 {
        listed.push("...".to_owned());
    }
    let comment = format!(
        "# shard {index} of {k}: op {op} from {source} (shapes {})",
        listed.join(", ")
    );
    e.out
        .push_str(&comment.replace(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'], " "));
    e.out.push('\n');
    e.key(op_key, 0);
    e.out.push('\n');
    let shapes_tag = doc.nodes[shapes].tag.clone();
    for (id, key, value) in pairs {
        let (key, value) = (*key, *value);
        if !is_shapes(id) {
            e.pair(key, value, 2, false);
            continue;
        }
        e.out.push_str("  ");
        e.key(key, 2);
        if shapes_tag == resolve::SEQ {
            e.out.push('\n');
            for &j in picked {
                e.item(items[j], 4, false);
            }
        } else {
            e.out.push(' ');
            e.out.push_str(&crate::emit::short_tag(&shapes_tag));
            e.out.push_str(" [");
            for (n, &j) in picked.iter().enumerate() {
                if n > 0 {
                    e.out.push_str(", ");
                }
                e.flow(items[j]);
            }
            e.out.push_str("]\n");
        }
    }
    e.out
}

fn is_shapes(key: &Key) -> bool {
    matches!(key, Key::Str(s) if s == "shapes")
}
