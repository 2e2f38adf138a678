//! PyYAML 6's `yaml.safe_load`, in Rust, object for object, and an emitter whose text
//! `safe_load` reads back into the same objects.
//!
//! A file meant for `yaml.safe_load` is defined by what PyYAML reads, not by the YAML spec, and
//! the two part both ways: PyYAML reads `- [1,` continued on a less indented line and `[1, 2]#c`,
//! and refuses a tab between tokens and `[|1]` (and `[1?]`, `[1, :]`, an empty block-mapping
//! key, an anchor defined twice, several documents, tags `safe_load` cannot construct such as
//! `!!python/tuple`). So this crate is a port of PyYAML (6.0; its
//! `yaml/*.py` modules, the pure-Python loader, not libyaml), module by module, with PyYAML's
//! names:
//!
//! - `scanner`: `reader.py` and `scanner.py`, function by function: the same tokens, the same
//!   errors in PyYAML's own words;
//! - `parser`: `parser.py`, state by state: the same events and tag handles;
//! - `composer`: `composer.py`: a node graph ([`Doc`]) in which an alias is the anchored node
//!   itself (cycles included), every node with its line and column;
//! - `resolver`: `resolver.py`'s implicit resolvers (same regexes, first-character tables and
//!   order), so every scalar carries the tag `safe_load` constructs it with;
//! - `constructor` and `pynum`: what `SafeConstructor` does with the graph, without building
//!   Python objects: merge keys flattened as `flatten_mapping` does, dict keys compared as
//!   Python's `==` and `hash` compare them ([`Key`]), ints of any size and floats rounded as
//!   Python's `int()` and `float()` build them ([`construct_int`], [`construct_float`]), and every
//!   construction `safe_load` would refuse found up front ([`Schema::validate`]);
//! - `emitter`: not a port of PyYAML's emitter but an [`Emitter`] of its own, which writes nodes
//!   back so that `safe_load` constructs them from the same tag and text (plain where the text
//!   resolves to the same tag, double-quoted and tagged otherwise; aliases written out in full);
//! - `json`: [`to_json`], the text `json.dumps(value, separators=(",", ":"))` gives the value
//!   `safe_load` builds, or `None` where `json.dumps` raises.
//!
//! What it guarantees: [`load`] accepts exactly the text `yaml.safe_load` accepts (one document,
//! UTF-8 as Python's text-mode `open` hands it over), and [`load`] with [`Schema::validate`]
//! refuses exactly what it refuses, as `name:line:col: ` and PyYAML's words; the graph with its
//! tags and [`Schema::dict`] stand for the objects `safe_load` returns; what the [`Emitter`]
//! writes reads back into those objects.
//!
//! What it does not do: build values (a timestamp or `!!binary` is compared by its tag and text),
//! read a stream of several documents (neither does `safe_load`), or know the tags of the full or
//! unsafe loaders (`!!python/...`: refused, as `safe_load` refuses them). Where PyYAML reads a
//! file this port cannot carry, it refuses it, saying so in the caller's [`Words`]: a lone UTF-16
//! surrogate (`"\ud800"`, which a Rust string cannot hold), nesting deeper than 400 levels, a merge
//! key that merges a mapping into itself, more than 1,000,000 merged pairs, and a `<<: [A, B]`
//! that PyYAML 6.0.4 reads differently from earlier versions ([`Schema::dict_any_pyyaml`]).
//!
//! How it is tested: the unit tests here pin PyYAML's tokens, events, errors and numbers, and
//! `tests/test_shard.py` drives `warmup-shard` (this crate's user) against the real PyYAML: on
//! FlagGems' shape files, a corpus of tricky documents, documents PyYAML's own emitter writes in
//! every style, and hypothesis-generated and mutated ones, `safe_load` of each shard file written
//! from this crate's graph must give the objects `safe_load` gives the source, and whatever
//! `safe_load` refuses must be refused.

mod composer;
mod constructor;
mod emitter;
mod json;
mod parser;
mod pynum;
mod resolver;
mod scanner;

pub use composer::{Doc, Kind, Node, NodeId};
pub use constructor::{Key, Schema, MAX_MERGED};
pub use emitter::{expanded_size, Emitter};
pub use json::to_json;
pub use pynum::{construct_float, construct_int, PyInt};
pub use resolver::construct_bool;

/// The full tags of the safe schema (`!!str` is `tag:yaml.org,2002:str`), as [`Node::tag`] holds
/// them.
pub mod tag {
    pub use crate::resolver::{
        BINARY, BOOL, FLOAT, INT, MAP, MERGE, NULL, OMAP, PAIRS, SEQ, SET, STR, TIMESTAMP, VALUE,
        YAML,
    };
}

/// The caller's words in the few errors that speak of it rather than of the YAML: where this
/// port refuses what PyYAML reads, and where an error says what to do with the file.
#[derive(Debug, Clone, Copy)]
pub struct Words {
    /// The program that reads the file: `PyYAML reads it, warmup-shard refuses it`.
    pub program: &'static str,
    /// The file, as advice names it: `save the shape file as UTF-8`.
    pub file: &'static str,
    /// What the program writes what it reads into: `cannot copy it into a shard`.
    pub output: &'static str,
}

/// The single document in `bytes`, as `yaml.safe_load` composes it, or `None` where the stream
/// holds no document (`safe_load` returns `None`). Errors start with `name:line:col: `.
pub fn load(bytes: &[u8], name: &str, words: Words) -> anyhow::Result<Option<Doc>> {
    let text = composer::prepare(bytes, name, words)?;
    composer::compose(&text, name, words)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words no caller uses, so that a test sees where they appear.
    pub const WORDS: Words = Words {
        program: "the reader",
        file: "the file",
        output: "copy",
    };

    /// The document `text` holds, which the test knows PyYAML reads.
    pub fn load(text: &str) -> Doc {
        super::load(text.as_bytes(), "t.yaml", WORDS)
            .expect("PyYAML reads it")
            .expect("a document")
    }
}
