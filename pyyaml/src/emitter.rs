//! Writes nodes back as YAML text that PyYAML reads into the same objects: every scalar as
//! (tag, text), which is all SafeConstructor looks at. A scalar goes out plain only when its
//! text is plain-safe and resolves to the same tag; otherwise double-quoted, with `!!tag` where
//! the tag is not `str`. Aliases are written out in full: [`expanded_size`] says how large that
//! makes a node, for a caller to bound (an alias bomb expands exponentially).

use crate::composer::{Doc, Kind, NodeId};
use crate::resolver::{self, plain_keeps};
use std::fmt::Write;

/// Longest key written as an implicit key (PyYAML allows 1024 characters).
const MAX_IMPLICIT_KEY: usize = 1000;

/// How many nodes `id` expands to once aliases are written out, saturating; `memo` holds one
/// slot per node of the document, `None` at first.
pub fn expanded_size(doc: &Doc, id: NodeId, memo: &mut Vec<Option<u64>>) -> u64 {
    if let Some(n) = memo[id] {
        return n;
    }
    let n = match &doc.nodes[id].kind {
        Kind::Scalar(_) => 1,
        Kind::Seq(items) => items.iter().fold(1u64, |acc, &i| {
            acc.saturating_add(expanded_size(doc, i, memo))
        }),
        Kind::Map(pairs) => pairs.iter().fold(1u64, |acc, &(k, v)| {
            acc.saturating_add(expanded_size(doc, k, memo))
                .saturating_add(expanded_size(doc, v, memo))
        }),
    };
    memo[id] = Some(n);
    n
}

/// Writes nodes of one document as YAML text: an untagged, non-empty collection in block style
/// where the source wrote it so, every other node in flow style; `safe_load` reads the text back
/// into the objects it builds from the nodes. A caller lays out the lines around them (a comment,
/// a key with part of its value) by writing to `out` between calls.
#[derive(Debug)]
pub struct Emitter<'d> {
    pub doc: &'d Doc,
    /// The text written so far.
    pub out: String,
}

impl<'d> Emitter<'d> {
    pub fn new(doc: &'d Doc) -> Self {
        Emitter {
            doc,
            out: String::new(),
        }
    }

    /// `n` spaces.
    pub fn indent(&mut self, n: usize) {
        self.out.extend(std::iter::repeat_n(' ', n));
    }

    /// A block-style key and value at `indent`, ending with a newline; `inline` when the
    /// current line already holds the indentation (after `- `).
    pub fn pair(&mut self, key: NodeId, value: NodeId, indent: usize, inline: bool) {
        if !inline {
            self.indent(indent);
        }
        self.key(key, indent);
        self.block_value(value, indent);
    }

    /// A block-style key and its `:`, the line's indentation (`indent`) already written; an
    /// explicit `? key` when it cannot be an implicit one.
    pub fn key(&mut self, key: NodeId, indent: usize) {
        match self.implicit_key(key) {
            Some(text) => self.out.push_str(&text),
            None => {
                self.out.push_str("? ");
                self.flow(key);
                self.out.push('\n');
                self.indent(indent);
            }
        }
        self.out.push(':');
    }

    /// The value after `key:` (no space written yet), ending with a newline.
    pub fn block_value(&mut self, id: NodeId, indent: usize) {
        match self.block_kind(id) {
            Some(true) => {
                self.out.push('\n');
                self.block_seq(id, indent + 2, false);
            }
            Some(false) => {
                self.out.push('\n');
                self.block_map(id, indent + 2, false);
            }
            None => {
                self.out.push(' ');
                self.flow(id);
                self.out.push('\n');
            }
        }
    }

    /// `Some(is_seq)` for a non-empty, untagged collection written in block style in the source.
    fn block_kind(&self, id: NodeId) -> Option<bool> {
        let node = &self.doc.nodes[id];
        match &node.kind {
            Kind::Seq(items) if !node.flow && !items.is_empty() && node.tag == resolver::SEQ => {
                Some(true)
            }
            Kind::Map(pairs) if !node.flow && !pairs.is_empty() && node.tag == resolver::MAP => {
                Some(false)
            }
            _ => None,
        }
    }

    pub fn block_map(&mut self, id: NodeId, indent: usize, inline: bool) {
        if let Kind::Map(pairs) = &self.doc.nodes[id].kind {
            for (i, &(k, v)) in pairs.iter().enumerate() {
                self.pair(k, v, indent, inline && i == 0);
            }
        }
    }

    pub fn block_seq(&mut self, id: NodeId, indent: usize, inline: bool) {
        if let Kind::Seq(items) = &self.doc.nodes[id].kind {
            for (i, &item) in items.iter().enumerate() {
                self.item(item, indent, inline && i == 0);
            }
        }
    }

    /// One `- item` of a block sequence at `indent`, ending with a newline.
    pub fn item(&mut self, id: NodeId, indent: usize, inline: bool) {
        if !inline {
            self.indent(indent);
        }
        self.out.push_str("- ");
        match self.block_kind(id) {
            Some(true) => self.block_seq(id, indent + 2, true),
            Some(false) => self.block_map(id, indent + 2, true),
            None => {
                self.flow(id);
                self.out.push('\n');
            }
        }
    }

    /// The node on one line, in flow style.
    pub fn flow(&mut self, id: NodeId) {
        let node = &self.doc.nodes[id];
        match &node.kind {
            Kind::Scalar(value) => {
                let text = scalar(value, &node.tag);
                self.out.push_str(&text);
            }
            Kind::Seq(items) => self.flow_seq(&node.tag, items),
            Kind::Map(pairs) => {
                self.tag_prefix(&node.tag, resolver::MAP);
                self.out.push('{');
                for (i, &(k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    match self.implicit_key(k) {
                        Some(text) => self.out.push_str(&text),
                        None => {
                            self.out.push_str("? ");
                            self.flow(k);
                            self.out.push(' ');
                        }
                    }
                    self.out.push_str(": ");
                    self.flow(v);
                }
                self.out.push('}');
            }
        }
    }

    /// A flow sequence of `items` on one line under `tag` (`!!omap [a: 1]`; no tag written for
    /// `!!seq`): a sequence node, or a part of its items.
    pub fn flow_seq(&mut self, tag: &str, items: &[NodeId]) {
        self.tag_prefix(tag, resolver::SEQ);
        self.out.push('[');
        for (i, &item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.flow(item);
        }
        self.out.push(']');
    }

    fn tag_prefix(&mut self, tag: &str, default: &str) {
        if tag != default {
            self.out.push_str(&short_tag(tag));
            self.out.push(' ');
        }
    }

    /// The key as an implicit (single-line, short) key, or None when it needs `? `.
    pub fn implicit_key(&self, id: NodeId) -> Option<String> {
        let node = &self.doc.nodes[id];
        match &node.kind {
            Kind::Scalar(value) => {
                let text = scalar(value, &node.tag);
                (text.chars().count() <= MAX_IMPLICIT_KEY).then_some(text)
            }
            _ => None,
        }
    }
}

/// `!!name` for the yaml.org tags, `!<uri>` for any other.
fn short_tag(tag: &str) -> String {
    match tag.strip_prefix(resolver::YAML) {
        Some(name) if name.chars().all(|c| c.is_ascii_alphanumeric()) => format!("!!{name}"),
        _ => format!("!<{tag}>"),
    }
}

/// One scalar, written so that PyYAML constructs it from the same tag and text.
fn scalar(value: &str, tag: &str) -> String {
    if tag == resolver::NULL {
        // construct_yaml_null ignores the text.
        return "null".to_owned();
    }
    if plain_safe(value) && plain_keeps(value, tag) {
        return value.to_owned();
    }
    let quoted = double_quoted(value);
    if tag == resolver::STR {
        quoted
    } else {
        format!("{} {quoted}", short_tag(tag))
    }
}

/// Whether `value` reads back as the same plain scalar in block and flow context alike.
fn plain_safe(value: &str) -> bool {
    let mut chars = value.chars().peekable();
    let Some(&first) = chars.peek() else {
        return false;
    };
    if value.starts_with("---") || value.starts_with("...") || value.ends_with([' ', ':']) {
        return false;
    }
    let first_ok = first.is_alphanumeric()
        || "_.+/(~$^=<".contains(first)
        || (first == '-' && value[1..].starts_with(|c: char| c != ' '));
    if !first_ok {
        return false;
    }
    let mut prev = ' ';
    let bytes: Vec<char> = value.chars().collect();
    for (i, &c) in bytes.iter().enumerate() {
        let ok = c.is_alphanumeric()
            || "_.+-/()~$^=<;".contains(c)
            || (c == ' ' && prev != ' ')
            || (c == ':' && bytes.get(i + 1).is_some_and(|n| n.is_alphanumeric()));
        if !ok {
            return false;
        }
        prev = c;
    }
    true
}

/// A double-quoted YAML string holding exactly `value`, escaping what PyYAML's reader refuses
/// raw or would read as a line break.
fn double_quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            '\x20'..='\x7e' => out.push(c),
            '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}' | '\u{ff00}'..='\u{fffd}'
                if !matches!(c, '\u{2028}' | '\u{2029}') =>
            {
                out.push(c)
            }
            '\u{10000}'.. => out.push(c),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_keep_their_tag_through_the_text() {
        assert_eq!(scalar("64", resolver::INT), "64");
        assert_eq!(scalar("yes", resolver::STR), "\"yes\"");
        assert_eq!(scalar("1e-5", resolver::STR), "1e-5");
        assert_eq!(scalar("017", resolver::STR), "\"017\"");
        assert_eq!(scalar("abc", resolver::INT), "!!int \"abc\"");
        assert_eq!(scalar("T, N", resolver::STR), "\"T, N\"");
        assert_eq!(scalar("", resolver::NULL), "null");
        assert_eq!(scalar("a\u{2028}\"b", resolver::STR), "\"a\\u2028\\\"b\"");
        assert_eq!(scalar("-", resolver::STR), "\"-\"");
        assert_eq!(scalar("---x", resolver::STR), "\"---x\"");
        assert_eq!(scalar("<<", resolver::MERGE), "<<");
    }
}
