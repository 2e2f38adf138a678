//! The shape file as warmup-shard reads and writes it, over the `pyyaml` port: read into the
//! graph `yaml.safe_load` composes, with warmup-shard's words in the errors where the port refuses
//! what PyYAML reads; and one shard's file written back from that graph, which `safe_load` reads
//! into the same objects: a comment line saying where it comes from, the entry's key, the entry's
//! pairs in their order, and its `shapes` list holding only the shard's shapes.
//!
//! Why the entry is found under the op's name, or `--entry`, and kept as the shard's key: FlagGems
//! (`benchmark/performance_utils.py`, `Benchmark.set_shapes`) reads the shape file with
//! `yaml.safe_load`, takes the op's entry when the op is a top-level key, else the first class of
//! its benchmark's `__mro__` that is one (its bundled `core_shapes.yaml` keeps mm's, bmm's and
//! addmm's shapes under `BlasBenchmark`), else the class's default shapes. warmup-shard does not
//! know the benchmark's classes, so the caller names the key and every shard file keeps it: a
//! child's benchmark finds its shard's shapes by the same lookup. At `--level comprehensive` (not
//! under `--query`) FlagGems adds a benchmark's `set_more_shapes()`, which are not in the file:
//! they cannot be split, and every child sweeps them (by-key mode shares them instead).
//!
//! Why a list merge `<<: [*a, *b]` giving one key two values is refused on the op's entry:
//! PyYAML 6.0.4 takes `b`'s value, 6.0.3 and the merge-key spec `a`'s, and warmup-shard would have
//! to pick.
//! Inside a shape the merge is written as a merge, so every child's PyYAML reads it as it reads
//! the source.

use crate::flags::TOOL;
use anyhow::{bail, Result};
use pyyaml::{tag, Doc, Emitter, NodeId, Words};

/// How pyyaml's errors name warmup-shard, the shape file, and what it is cut into.
const WORDS: Words = Words {
    program: TOOL,
    file: "the shape file",
    output: "shard",
};

/// Most nodes one shard may expand to, so an alias bomb is refused rather than written.
pub const MAX_NODES: u64 = 20_000_000;

/// The shape file's document, as `safe_load` composes it; `name` is how errors name the file.
pub fn load(bytes: &[u8], name: &str) -> Result<Doc> {
    match pyyaml::load(bytes, name, WORDS)? {
        Some(doc) => Ok(doc),
        None => {
            bail!("{name}: empty file: no YAML document; give the shape file with the op's entry")
        }
    }
}

/// One shard's shape file: the `comment` line, then the entry's key (`key`) holding its
/// `pairs` in order, the `shapes` pair (`pairs[shapes_at]`) holding only the `picked` items.
/// A `shapes` list with a tag of its own is written as a flow list under that tag.
pub fn shard_file(
    doc: &Doc,
    comment: &str,
    key: NodeId,
    pairs: &[(NodeId, NodeId)],
    shapes_at: usize,
    picked: &[NodeId],
) -> String {
    let mut e = Emitter::new(doc);
    e.out
        .push_str(&comment.replace(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'], " "));
    e.out.push('\n');
    e.key(key, 0);
    e.out.push('\n');
    for (i, &(k, v)) in pairs.iter().enumerate() {
        if i != shapes_at {
            e.pair(k, v, 2, false);
            continue;
        }
        e.indent(2);
        e.key(k, 2);
        let tag = &doc.nodes[v].tag;
        if tag == tag::SEQ {
            e.out.push('\n');
            for &item in picked {
                e.item(item, 4, false);
            }
        } else {
            e.out.push(' ');
            e.flow_seq(tag, picked);
            e.out.push('\n');
        }
    }
    e.out
}

#[cfg(test)]
mod tests {
    use super::MAX_NODES;

    /// `20000000` as the contract writes it, `20,000,000`.
    fn grouped(n: u64) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, d) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(d);
        }
        out
    }

    #[test]
    fn the_contract_lists_both_limits_the_shape_file_is_held_to() {
        let contract = include_str!("../../docs/CONTRACT.md");
        let refused = contract
            .split("What PyYAML reads but warmup-shard refuses")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .expect("the contract's list of what warmup-shard refuses");
        let merged = u64::try_from(pyyaml::MAX_MERGED).expect("fits");
        for needle in [
            format!("more than {} entries", grouped(merged)),
            format!(
                "more than {} nodes once aliases are written out",
                grouped(MAX_NODES)
            ),
        ] {
            let flat = refused.replace('\n', " ");
            assert!(flat.contains(&needle), "{needle:?} not in: {refused}");
        }
    }
}
