//! What SafeConstructor does with the node graph, without building Python objects: merge keys
//! flattened as `flatten_mapping` does, dict keys compared as Python compares them, and every
//! construction `safe_load` would refuse found up front, so that bad input is refused before
//! anything is built from it.

use crate::composer::{Doc, Kind, NodeId};
use crate::pynum::{construct_float, construct_int, PyInt};
use crate::resolver::{self, construct_bool};
use anyhow::Result;
use std::collections::{HashMap, HashSet};

#[derive(Debug, PartialEq, Eq, Hash)]
enum Ident {
    Text(String),
    Node(NodeId),
}

/// A merge may not flatten to more pairs than this (PyYAML would exhaust memory instead).
pub const MAX_MERGED: usize = 1_000_000;

/// A dict key as Python's `==` and `hash` see it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Str(String),
    /// int, bool, and floats with an integral value compare equal to each other.
    Int(i128),
    /// The same, for values outside i128.
    BigInt(PyInt),
    /// A non-integral float, by its bits; NaN keys never compare equal (see `Unique`).
    Float(u64),
    Null,
    /// Keys compared by their tag and text (bytes, timestamps): close, not exact.
    Other(String, String),
    Unique(NodeId),
}

impl Key {
    /// An int key: [`Key::Int`] where it fits, so that each value has one key.
    fn int(n: PyInt) -> Key {
        n.to_i128().map_or(Key::BigInt(n), Key::Int)
    }
}

#[derive(Debug)]
pub struct Schema<'d> {
    pub doc: &'d Doc,
    pub name: &'d str,
    flat: HashMap<NodeId, Vec<(NodeId, NodeId)>>,
    /// Mappings whose merges are being flattened: reaching one again is a merge into itself.
    flattening: HashSet<NodeId>,
}

impl<'d> Schema<'d> {
    pub fn new(doc: &'d Doc, name: &'d str) -> Self {
        Schema {
            doc,
            name,
            flat: HashMap::new(),
            flattening: HashSet::new(),
        }
    }

    fn err(&self, id: NodeId, what: impl std::fmt::Display) -> anyhow::Error {
        self.doc.error_at(self.name, id, what)
    }

    fn too_many_merged(&self, map: NodeId) -> anyhow::Error {
        self.err(map, format!("merge keys (<<) expand this mapping to more than {MAX_MERGED} entries: refusing; write the mapping out with fewer merges"))
    }

    fn is_merge_key(&self, id: NodeId) -> bool {
        self.doc.nodes[id].tag == resolver::MERGE
    }

    /// The mapping's pairs after PyYAML 6's `flatten_mapping`: merged pairs first, in the
    /// order the merges list them, a merged key object seen before skipped, then its own pairs.
    pub fn flatten(&mut self, map: NodeId) -> Result<Vec<(NodeId, NodeId)>> {
        if let Some(done) = self.flat.get(&map) {
            return Ok(done.clone());
        }
        let Kind::Map(pairs) = &self.doc.nodes[map].kind else {
            return Err(self.err(map, "expected a mapping"));
        };
        if !self.flattening.insert(map) {
            return Err(self.err(map, format!("a merge key (<<) that merges this mapping into itself (through aliases): PyYAML reads it, {} refuses it; merge a copy of the data instead of an alias to a mapping that holds this merge", self.doc.words.program)));
        }
        let mut merged = Vec::new();
        let mut seen: HashSet<Ident> = HashSet::new();
        let mut own = Vec::new();
        for &(k, v) in pairs {
            if !self.is_merge_key(k) {
                own.push((k, v));
                continue;
            }
            let sources: Vec<NodeId> = match &self.doc.nodes[v].kind {
                Kind::Map(_) => vec![v],
                Kind::Seq(items) => {
                    for &item in items {
                        if !matches!(self.doc.nodes[item].kind, Kind::Map(_)) {
                            return Err(self.err(item, "a merge key (<<) list may hold only mappings: fix the item or quote the \"<<\" key"));
                        }
                    }
                    items.clone()
                }
                Kind::Scalar(_) => {
                    return Err(self.err(v, "a merge key (<<) needs a mapping or a list of mappings: fix the value or quote the \"<<\" key"))
                }
            };
            for source in sources {
                for (mk, mv) in self.flatten(source)? {
                    if seen.insert(self.ident(mk)) {
                        merged.push((mk, mv));
                    }
                }
            }
            if merged.len() > MAX_MERGED {
                return Err(self.too_many_merged(map));
            }
        }
        merged.extend(own);
        self.flattening.remove(&map);
        self.flat.insert(map, merged.clone());
        Ok(merged)
    }

    /// What PyYAML 6 compares merged keys by: `id()` of the key's text object. CPython shares
    /// one object for the empty string and each one-character Latin-1 string; any other text is
    /// its own object, shared only through an alias (the same node).
    fn ident(&self, key: NodeId) -> Ident {
        match &self.doc.nodes[key].kind {
            Kind::Scalar(v) if v.chars().count() <= 1 && v.chars().all(|c| (c as u32) < 256) => {
                Ident::Text(v.clone())
            }
            _ => Ident::Node(key),
        }
    }

    /// The mapping's pairs as PyYAML up to 6.0.3 flattens them, which is what the merge-key
    /// spec says: in `<<: [A, B]` A's keys override B's. Its mappings are listed in reverse and
    /// every pair kept, so that the dict's last-value-wins lets the first mapping win.
    fn flatten_spec(&self, map: NodeId) -> Result<Vec<(NodeId, NodeId)>> {
        let Kind::Map(pairs) = &self.doc.nodes[map].kind else {
            return Err(self.err(map, "expected a mapping"));
        };
        let mut merged = Vec::new();
        let mut own = Vec::new();
        for &(k, v) in pairs {
            if !self.is_merge_key(k) {
                own.push((k, v));
                continue;
            }
            // `flatten` has checked the shape of every merge already.
            let sources = match &self.doc.nodes[v].kind {
                Kind::Seq(items) => items.iter().rev().copied().collect(),
                _ => vec![v],
            };
            for source in sources {
                merged.extend(self.flatten_spec(source)?);
                if merged.len() > MAX_MERGED {
                    return Err(self.too_many_merged(map));
                }
            }
        }
        merged.extend(own);
        Ok(merged)
    }

    /// The dict `safe_load` builds for the mapping, under any PyYAML 6.
    ///
    /// PyYAML 6.0.4 merges `<<: [A, B]` differently from earlier versions (the last mapping's
    /// value of a key shared by A and B wins, where the spec and 6.0.3 let the first win). Where
    /// that changes the dict, the file means different objects to different versions, and the
    /// mapping is refused, saying how to write it so that every version agrees.
    pub fn dict_any_pyyaml(&mut self, map: NodeId) -> Result<Vec<(Key, NodeId, NodeId)>> {
        let now = self.dict(map)?;
        let spec = self.dict_from(self.flatten_spec(map)?)?;
        let spec: HashMap<&Key, NodeId> = spec.iter().map(|(key, _, v)| (key, *v)).collect();
        for (key, k, v) in &now {
            let agrees = spec
                .get(key)
                .is_some_and(|&w| w == *v || self.text(w) == self.text(*v));
            if !agrees {
                return Err(self.err(
                    map,
                    format!(
                        "key {} reaches this mapping from several merged mappings (<<: [...]) with \
                         different values; PyYAML 6.0.4 takes the last of them, earlier versions the \
                         first, so no {} can match every PyYAML: set the key on this mapping \
                         itself, or keep it in one of the merged mappings",
                        self.text(*k),
                        self.doc.words.output,
                    ),
                ));
            }
        }
        Ok(now)
    }

    /// A node as the [`Emitter`](crate::Emitter) writes it in flow style: equal texts are equal values. A node that
    /// reaches a cycle cannot be written out; it is equal only to itself.
    fn text(&self, id: NodeId) -> String {
        if self.doc.reaches_cycle[id] {
            return format!("<recursive node {id}>");
        }
        let mut e = crate::emitter::Emitter::new(self.doc);
        e.flow(id);
        e.out
    }

    /// The mapping as the dict `safe_load` builds: one entry per distinct key, at the position
    /// the key first appeared, with the value it last had.
    pub fn dict(&mut self, map: NodeId) -> Result<Vec<(Key, NodeId, NodeId)>> {
        let pairs = self.flatten(map)?;
        self.dict_from(pairs)
    }

    fn dict_from(&self, pairs: Vec<(NodeId, NodeId)>) -> Result<Vec<(Key, NodeId, NodeId)>> {
        let mut out: Vec<(Key, NodeId, NodeId)> = Vec::new();
        let mut index: HashMap<Key, usize> = HashMap::new();
        for (k, v) in pairs {
            let key = self.key(k)?;
            match index.get(&key) {
                Some(&i) => out[i].2 = v,
                None => {
                    index.insert(key.clone(), out.len());
                    out.push((key, k, v));
                }
            }
        }
        Ok(out)
    }

    /// The key node's identity in a dict; collections are unhashable, as in `safe_load`.
    pub fn key(&self, id: NodeId) -> Result<Key> {
        let node = &self.doc.nodes[id];
        let Kind::Scalar(value) = &node.kind else {
            return Err(self.err(id, "a list or mapping used as a mapping key: safe_load cannot hash it; use a scalar key"));
        };
        Ok(match node.tag.as_str() {
            resolver::STR | resolver::VALUE => Key::Str(value.clone()),
            resolver::NULL => Key::Null,
            resolver::BOOL => match construct_bool(value) {
                Some(b) => Key::Int(i128::from(b)),
                None => Key::Other(node.tag.clone(), value.clone()),
            },
            resolver::INT => match construct_int(value) {
                Some(n) => Key::int(n),
                None => Key::Other(node.tag.clone(), value.clone()),
            },
            resolver::FLOAT => match construct_float(value) {
                Some(f) if f.is_nan() => Key::Unique(id),
                // Python's hash: a float with an integral value is the int it equals.
                Some(f) if f.is_finite() && f.fract() == 0.0 => {
                    Key::int(PyInt::from_integral_f64(f))
                }
                Some(f) => Key::Float((f + 0.0).to_bits()),
                None => Key::Other(node.tag.clone(), value.clone()),
            },
            _ => Key::Other(node.tag.clone(), value.clone()),
        })
    }

    /// Finds every construction `safe_load` would refuse anywhere in the document.
    pub fn validate(&mut self) -> Result<()> {
        let mut seen = vec![false; self.doc.nodes.len()];
        let mut todo = vec![self.doc.root];
        while let Some(id) = todo.pop() {
            if std::mem::replace(&mut seen[id], true) {
                continue;
            }
            let node = &self.doc.nodes[id];
            let tag = node.tag.as_str();
            match &node.kind {
                Kind::Scalar(value) => {
                    if !resolver::is_scalar_tag(tag) {
                        return Err(self.err(id, unknown_tag(tag, "scalar")));
                    }
                    if let Some(why) = resolver::construct_error(tag, value) {
                        return Err(self.err(id, format!("{why}: safe_load rejects it; fix the value or quote it without the tag")));
                    }
                }
                Kind::Seq(items) => {
                    if !matches!(tag, resolver::SEQ | resolver::OMAP | resolver::PAIRS) {
                        return Err(self.err(id, unknown_tag(tag, "list")));
                    }
                    if tag != resolver::SEQ {
                        for &item in items {
                            match &self.doc.nodes[item].kind {
                                Kind::Map(pairs) if pairs.len() == 1 => {
                                    todo.push(pairs[0].0);
                                    todo.push(pairs[0].1);
                                }
                                _ => return Err(self.err(item, "each item of an !!omap or !!pairs list must be a one-entry mapping: safe_load rejects this one; write it as `- key: value`")),
                            }
                        }
                    } else {
                        todo.extend(items.iter().copied());
                    }
                }
                Kind::Map(_) => {
                    if !matches!(tag, resolver::MAP | resolver::SET) {
                        return Err(self.err(id, unknown_tag(tag, "mapping")));
                    }
                    for (_, k, v) in self.dict(id)? {
                        // `=` as a key is the string "=" (flatten_mapping retags it).
                        if self.doc.nodes[k].tag != resolver::VALUE {
                            todo.push(k);
                        }
                        todo.push(v);
                    }
                }
            }
        }
        Ok(())
    }
}

fn unknown_tag(tag: &str, what: &str) -> String {
    let shown = match tag.strip_prefix(resolver::YAML) {
        Some(short) => format!("!!{short}"),
        None => tag.to_owned(),
    };
    if tag == resolver::MERGE || tag == resolver::VALUE {
        format!("a plain {shown:?} {what} has no value in safe_load (it is {shown}): quote it")
    } else {
        format!("tag {shown} on a {what}: safe_load has no constructor for it; remove the tag or use a standard one (!!str, !!int, !!float, !!bool, !!null, !!binary, !!timestamp, !!seq, !!map, !!set, !!omap, !!pairs)")
    }
}
