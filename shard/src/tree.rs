//! The document as PyYAML's composer sees it: a node graph (aliases are the same node) built from
//! saphyr's events, every scalar carrying the tag `safe_load` would construct it with.
//!
//! Why an event parser and not serde_yaml (named in the design card): serde_yaml resolves
//! scalars by YAML 1.2 rules (`yes` is a string to it, `017` decimal, `1:30` a string), so values
//! it hands back are not the ones PyYAML's YAML 1.1 `safe_load` builds; it cannot say where a node
//! is in the file for error messages; and it is archived upstream. saphyr-parser gives the raw
//! events with positions, and `resolve` applies PyYAML's own rules to them.

use crate::resolve;
use anyhow::{bail, Result};
use saphyr_parser::{Event, Parser, ScalarStyle};
use std::collections::HashMap;

/// Nesting deeper than this is refused (PyYAML itself would hit Python's recursion limit).
const MAX_DEPTH: usize = 400;

pub type NodeId = usize;

#[derive(Debug)]
pub enum Kind {
    Scalar(String),
    Seq(Vec<NodeId>),
    Map(Vec<(NodeId, NodeId)>),
}

#[derive(Debug)]
pub struct Node {
    pub kind: Kind,
    /// The full tag `safe_load` constructs the node with (explicit, or resolved).
    pub tag: String,
    /// Whether the collection was written in flow style (`[...]`, `{...}`).
    pub flow: bool,
    /// 1-based line and column of the node's start.
    pub line: usize,
    pub col: usize,
}

#[derive(Debug)]
pub struct Doc {
    pub nodes: Vec<Node>,
    pub root: NodeId,
}

/// Where an error is reported: `name:line:col: what`.
pub fn at(name: &str, line: usize, col: usize, what: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{name}:{line}:{col}: {what}")
}

/// Checks the text the way PyYAML's Reader would and returns it ready for saphyr: without a
/// leading BOM and with every line break as `\n` (PyYAML folds CRLF and CR to `\n` too).
pub fn prepare(bytes: &[u8], name: &str) -> Result<String> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            bail!(
                "{name}:{line}: not UTF-8 text (byte {}): give a YAML shape file",
                e.valid_up_to()
            );
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (mut line, mut col) = (1, 1);
    for c in text.chars() {
        let printable = matches!(c, '\t' | '\n' | '\r' | '\x20'..='\x7e' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..);
        if !printable {
            return Err(at(
                name,
                line,
                col,
                format!(
                    "control character U+{:04X} is not allowed in YAML: remove it or write it as an escape in a double-quoted string",
                    c as u32
                ),
            ));
        }
        if matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}') {
            return Err(at(
                name,
                line,
                col,
                format!(
                    "U+{:04X} is a line break to PyYAML but not to this parser: write it as an escape in a double-quoted string",
                    c as u32
                ),
            ));
        }
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    Ok(text.replace("\r\n", "\n").replace('\r', "\n"))
}

enum Frame {
    Seq(NodeId),
    Map(NodeId, Option<NodeId>),
}

/// Builds the node graph of the single document in `text`.
pub fn compose(text: &str, name: &str) -> Result<Doc> {
    let chars: Vec<char> = text.chars().collect();
    let mut nodes: Vec<Node> = Vec::new();
    let mut anchors: HashMap<usize, NodeId> = HashMap::new();
    let mut open: Vec<Frame> = Vec::new();
    let mut root: Option<NodeId> = None;
    let mut documents = 0usize;
    let mut parser = Parser::new_from_str(text);
    let mut events = std::iter::from_fn(|| parser.next_event()).peekable();
    while let Some(item) = events.next() {
        let (event, span) = item.map_err(|e| {
            let m = e.marker();
            at(name, m.line(), m.col() + 1, e.info())
        })?;
        let (line, col) = (span.start.line(), span.start.col() + 1);
        let new = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(at(
                        name,
                        line,
                        col,
                        "a second YAML document: safe_load reads one document per file; keep one",
                    ));
                }
                continue;
            }
            Event::Alias(id) => match anchors.get(&id) {
                Some(&node) => {
                    if is_open(&open, node) {
                        return Err(at(
                            name,
                            line,
                            col,
                            "an alias to a node that contains it (recursive structure): not supported; write the data out",
                        ));
                    }
                    node
                }
                None => return Err(at(name, line, col, "alias to an unknown anchor")),
            },
            Event::Scalar(value, style, anchor, tag) => {
                let in_flow = open
                    .iter()
                    .any(|f| matches!(f, Frame::Seq(i) | Frame::Map(i, _) if nodes[*i].flow));
                if style == ScalarStyle::Plain
                    && value.starts_with('?')
                    && (in_flow || value.len() == 1)
                {
                    return Err(at(
                        name,
                        line,
                        col,
                        "a plain scalar starting with \"?\": PyYAML reads the \"?\" as a mapping key indicator and this parser does not; quote the scalar or write the key explicitly",
                    ));
                }
                let tag = match tag.map(|t| format!("{}{}", t.handle, t.suffix)) {
                    None if style == ScalarStyle::Plain => resolve::implicit(&value).to_owned(),
                    None => resolve::STR.to_owned(),
                    Some(t) if t == "!" => resolve::implicit(&value).to_owned(),
                    Some(t) => t,
                };
                let id = push(
                    &mut nodes,
                    Kind::Scalar(value.into_owned()),
                    tag,
                    false,
                    line,
                    col,
                );
                if anchor != 0 {
                    anchors.insert(anchor, id);
                }
                id
            }
            Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                if open.len() >= MAX_DEPTH {
                    return Err(at(
                        name,
                        line,
                        col,
                        format!("nesting deeper than {MAX_DEPTH} levels"),
                    ));
                }
                let is_seq = matches!(event, Event::SequenceStart(..));
                let tag = match tag.as_ref().map(|t| format!("{}{}", t.handle, t.suffix)) {
                    None => None,
                    Some(t) if t == "!" => None,
                    Some(t) => Some(t),
                };
                let (kind, tag) = if is_seq {
                    (
                        Kind::Seq(Vec::new()),
                        tag.unwrap_or_else(|| resolve::SEQ.to_owned()),
                    )
                } else {
                    (
                        Kind::Map(Vec::new()),
                        tag.unwrap_or_else(|| resolve::MAP.to_owned()),
                    )
                };
                // An indentless block sequence (`key:` then `- item` at the key's own indent)
                // starts where its first item does; when that item is a flow collection, both
                // starts share one position, and the first of the two is the block sequence.
                let shares_start_with_child = matches!(
                    events.peek(),
                    Some(Ok((Event::SequenceStart(..) | Event::MappingStart(..), next)))
                        if next.start.index() == span.start.index()
                );
                let in_flow = open.last().is_some_and(|f| match f {
                    Frame::Seq(i) | Frame::Map(i, _) => nodes[*i].flow,
                });
                let flow =
                    in_flow || (!shares_start_with_child && is_flow(&chars, span.start.index()));
                let id = push(&mut nodes, kind, tag, flow, line, col);
                if anchor != 0 {
                    anchors.insert(anchor, id);
                }
                open.push(if is_seq {
                    Frame::Seq(id)
                } else {
                    Frame::Map(id, None)
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let done = match open.pop() {
                    Some(Frame::Seq(id) | Frame::Map(id, _)) => id,
                    None => bail!("{name}: parser closed a collection that was never opened"),
                };
                attach(&mut nodes, &mut open, &mut root, done);
                continue;
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => continue,
        };
        attach(&mut nodes, &mut open, &mut root, new);
    }
    match root {
        Some(root) => Ok(Doc { nodes, root }),
        None => {
            bail!("{name}: empty file: no YAML document; give the shape file with the op's entry")
        }
    }
}

fn push(
    nodes: &mut Vec<Node>,
    kind: Kind,
    tag: String,
    flow: bool,
    line: usize,
    col: usize,
) -> NodeId {
    nodes.push(Node {
        kind,
        tag,
        flow,
        line,
        col,
    });
    nodes.len() - 1
}

fn is_open(open: &[Frame], node: NodeId) -> bool {
    open.iter()
        .any(|f| matches!(f, Frame::Seq(i) | Frame::Map(i, _) if *i == node))
}

/// Adds a finished node to the collection being built, or makes it the root.
fn attach(nodes: &mut [Node], open: &mut [Frame], root: &mut Option<NodeId>, id: NodeId) {
    match open.last_mut() {
        None => *root = Some(id),
        Some(Frame::Seq(parent)) => {
            if let Kind::Seq(items) = &mut nodes[*parent].kind {
                items.push(id);
            }
        }
        Some(Frame::Map(parent, pending)) => match pending.take() {
            None => *pending = Some(id),
            Some(key) => {
                if let Kind::Map(pairs) = &mut nodes[*parent].kind {
                    pairs.push((key, id));
                }
            }
        },
    }
}

/// Whether the collection starting at char `index` is a flow one: its node properties
/// (`&anchor`, `!tag`) skipped, the next character opens a flow collection.
fn is_flow(chars: &[char], mut index: usize) -> bool {
    loop {
        match chars.get(index) {
            Some('[' | '{') => return true,
            Some('&' | '!') => {
                while chars.get(index).is_some_and(|c| !c.is_whitespace()) {
                    index += 1;
                }
                while chars.get(index).is_some_and(|c| c.is_whitespace()) {
                    index += 1;
                }
            }
            _ => return false,
        }
    }
}
