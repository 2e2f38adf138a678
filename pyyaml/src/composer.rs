//! The document as PyYAML's composer sees it: a node graph (aliases are the same node, and may
//! make cycles, as in PyYAML) built from [`crate::parser`]'s events, every scalar carrying the tag
//! `safe_load` would construct it with.
//!
//! The events come from a port of PyYAML's own scanner and parser rather than from a YAML library:
//! the contract is what `yaml.safe_load` reads, and PyYAML departs from the YAML spec both ways
//! (it reads `- [1,` continued on a less indented line and `[1, 2]#c`; it refuses a tab between
//! tokens and `[|1]`), so any spec parser accepts some files PyYAML refuses and refuses some it
//! reads. Scalars are then resolved by PyYAML's rules in `resolver`.

use crate::parser::{Ev, Event, Parser};
use crate::resolver;
use crate::scanner::YamlError;
use crate::Words;
use anyhow::{bail, Result};
use std::collections::HashMap;

/// Nesting deeper than this is refused: PyYAML's composer recurses twice per level and hits
/// Python's default recursion limit (1000) near 500 levels, earlier when called from deep code.
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
    /// Per node: whether it reaches a cycle (an alias to a collection that contains it).
    pub reaches_cycle: Vec<bool>,
    /// The caller's words, for the constructor's refusals.
    pub(crate) words: Words,
}

impl Doc {
    /// An error at node `id`'s position in the file `name`.
    pub fn error_at(&self, name: &str, id: NodeId, what: impl std::fmt::Display) -> anyhow::Error {
        let node = &self.nodes[id];
        at(name, node.line, node.col, what)
    }
}

/// Where an error is reported: `name:line:col: what`.
pub fn at(name: &str, line: usize, col: usize, what: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{name}:{line}:{col}: {what}")
}

/// Checks the text the way PyYAML's Reader would and returns it ready for the scanner: without a
/// leading BOM and with `\r\n` and `\r` as `\n`, as Python's text-mode `open` hands it to PyYAML.
pub fn prepare(bytes: &[u8], name: &str, words: Words) -> Result<String> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            // The valid prefix is UTF-8 by definition; the place is where decoding stops.
            let good = String::from_utf8_lossy(&bytes[..e.valid_up_to()]);
            let line = good.matches('\n').count() + 1;
            let col = good.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            return Err(at(
                name,
                line,
                col,
                format!(
                    "not UTF-8 text (byte {}): safe_load cannot decode it; save {} as UTF-8",
                    e.valid_up_to(),
                    words.file
                ),
            ));
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (mut line, mut col) = (1, 1);
    for c in text.chars() {
        let printable = matches!(c, '\t' | '\n' | '\r' | '\x20'..='\x7e' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..);
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
        if matches!(c, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}') {
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

/// A PyYAML scanner or parser error, with PyYAML's own words and what to do about it.
fn syntax(name: &str, e: &YamlError) -> anyhow::Error {
    let context = match &e.context {
        Some((what, m)) if (m.line, m.column) != (e.mark.line, e.mark.column) => {
            format!(
                " ({what} started at line {}, column {})",
                m.line + 1,
                m.column + 1
            )
        }
        Some((what, _)) => format!(" ({what})"),
        None => String::new(),
    };
    let hint = if e.problem.contains("'\\t'") {
        "PyYAML allows a tab only inside a quoted or block scalar or a comment: use spaces there"
    } else if e.problem.ends_with("but found ':'") {
        "a mapping key is missing before the ':' (PyYAML reads no empty key there): write the key, or quote a value that starts with ':'"
    } else if e.problem.contains("cannot start any token") || e.problem.ends_with("but got '?'") {
        "quote the scalar that holds this character"
    } else {
        "fix the YAML at that place"
    };
    at(
        name,
        e.mark.line + 1,
        e.mark.column + 1,
        format!(
            "{}{context}: yaml.safe_load refuses this file; {hint}",
            e.problem
        ),
    )
}

/// Builds the node graph of the single document in `text`, as PyYAML's `compose` does; `None`
/// where the stream holds no document.
pub fn compose(text: &str, name: &str, words: Words) -> Result<Option<Doc>> {
    let mut composer = Composer::new(name, words);
    let mut parser = Parser::new(text, words);
    while let Some(event) = parser.next_event().map_err(|e| syntax(name, &e))? {
        composer.event(event)?;
    }
    Ok(composer.finish())
}

/// The graph being built from the events: its nodes, the anchors defined so far, the collections
/// still open, and where the event being composed starts.
struct Composer<'a> {
    name: &'a str,
    words: Words,
    nodes: Vec<Node>,
    anchors: HashMap<String, NodeId>,
    open: Vec<Frame>,
    root: Option<NodeId>,
    documents: usize,
    /// 1-based line and column of the current event's start.
    line: usize,
    col: usize,
}

impl<'a> Composer<'a> {
    fn new(name: &'a str, words: Words) -> Self {
        Composer {
            name,
            words,
            nodes: Vec::new(),
            anchors: HashMap::new(),
            open: Vec::new(),
            root: None,
            documents: 0,
            line: 0,
            col: 0,
        }
    }

    /// Composes one event: one method per kind of event.
    fn event(&mut self, event: Event) -> Result<()> {
        (self.line, self.col) = (event.start.line + 1, event.start.column + 1);
        match event.ev {
            Ev::DocumentStart => self.document_start(),
            Ev::Alias(anchor) => {
                let id = self.alias(&anchor)?;
                self.attach(id);
                Ok(())
            }
            Ev::Scalar {
                anchor,
                tag,
                plain_implicit,
                value,
            } => {
                let id = self.scalar(anchor, tag, plain_implicit, value)?;
                self.attach(id);
                Ok(())
            }
            Ev::SequenceStart { anchor, tag, flow } => {
                self.collection_start(Kind::Seq(Vec::new()), anchor, tag, flow)
            }
            Ev::MappingStart { anchor, tag, flow } => {
                self.collection_start(Kind::Map(Vec::new()), anchor, tag, flow)
            }
            Ev::SequenceEnd | Ev::MappingEnd => self.collection_end(),
            Ev::StreamStart | Ev::StreamEnd | Ev::DocumentEnd => Ok(()),
        }
    }

    fn finish(self) -> Option<Doc> {
        let words = self.words;
        self.root.map(|root| Doc {
            reaches_cycle: reaches_cycle(&self.nodes),
            nodes: self.nodes,
            root,
            words,
        })
    }

    /// An error at the current event's start.
    fn refuse(&self, what: impl std::fmt::Display) -> anyhow::Error {
        at(self.name, self.line, self.col, what)
    }

    fn document_start(&mut self) -> Result<()> {
        self.documents += 1;
        if self.documents > 1 {
            return Err(self.refuse(
                "a second YAML document: safe_load reads one document per file; keep one",
            ));
        }
        Ok(())
    }

    /// The anchored node itself.
    fn alias(&self, anchor: &str) -> Result<NodeId> {
        match self.anchors.get(anchor) {
            Some(&node) => Ok(node),
            None => Err(self.refuse(format!("alias *{anchor} to an unknown anchor: yaml.safe_load refuses it; define &{anchor} before its first alias"))),
        }
    }

    /// A scalar node with the tag `safe_load` constructs it with: its own, else the resolved one.
    fn scalar(
        &mut self,
        anchor: Option<String>,
        tag: Option<String>,
        plain_implicit: bool,
        value: String,
    ) -> Result<NodeId> {
        let tag = match tag {
            Some(t) if t != "!" => t,
            _ if plain_implicit => resolver::implicit(&value).to_owned(),
            _ => resolver::STR.to_owned(),
        };
        let id = self.push(Kind::Scalar(value), tag, false);
        self.define_anchor(anchor, id)?;
        Ok(id)
    }

    /// An empty sequence or mapping (`kind`), open until its end event.
    fn collection_start(
        &mut self,
        kind: Kind,
        anchor: Option<String>,
        tag: Option<String>,
        flow: bool,
    ) -> Result<()> {
        if self.open.len() >= MAX_DEPTH {
            return Err(self.refuse(format!("nesting deeper than {MAX_DEPTH} levels: PyYAML may read it up to its recursion limit, {} refuses it; flatten the nesting", self.words.program)));
        }
        let is_seq = matches!(kind, Kind::Seq(_));
        let default = if is_seq { resolver::SEQ } else { resolver::MAP };
        let tag = tag
            .filter(|t| t != "!")
            .unwrap_or_else(|| default.to_owned());
        let id = self.push(kind, tag, flow);
        // Registered before its content, as PyYAML does: an alias inside may refer to it.
        self.define_anchor(anchor, id)?;
        self.open.push(if is_seq {
            Frame::Seq(id)
        } else {
            Frame::Map(id, None)
        });
        Ok(())
    }

    fn collection_end(&mut self) -> Result<()> {
        let done = match self.open.pop() {
            Some(Frame::Seq(id) | Frame::Map(id, _)) => id,
            None => bail!(
                "{}: parser closed a collection that was never opened",
                self.name
            ),
        };
        self.attach(done);
        Ok(())
    }

    /// A new node, at the current event's start.
    fn push(&mut self, kind: Kind, tag: String, flow: bool) -> NodeId {
        self.nodes.push(Node {
            kind,
            tag,
            flow,
            line: self.line,
            col: self.col,
        });
        self.nodes.len() - 1
    }

    /// Gives `anchor`, if any, to node `id`; PyYAML refuses an anchor defined twice.
    fn define_anchor(&mut self, anchor: Option<String>, id: NodeId) -> Result<()> {
        let Some(anchor) = anchor else {
            return Ok(());
        };
        if let Some(&first) = self.anchors.get(&anchor) {
            let first = &self.nodes[first];
            return Err(self.refuse(format!(
                "duplicate anchor &{anchor} (first defined at line {}, column {}): yaml.safe_load refuses one anchor defined twice; rename one of them and the aliases meant for it",
                first.line, first.col
            )));
        }
        self.anchors.insert(anchor, id);
        Ok(())
    }

    /// Adds a finished node to the collection being built, or makes it the root.
    fn attach(&mut self, id: NodeId) {
        match self.open.last_mut() {
            None => self.root = Some(id),
            Some(Frame::Seq(parent)) => {
                if let Kind::Seq(items) = &mut self.nodes[*parent].kind {
                    items.push(id);
                }
            }
            Some(Frame::Map(parent, pending)) => match pending.take() {
                None => *pending = Some(id),
                Some(key) => {
                    if let Kind::Map(pairs) = &mut self.nodes[*parent].kind {
                        pairs.push((key, id));
                    }
                }
            },
        }
    }
}

fn children(node: &Node) -> Vec<NodeId> {
    match &node.kind {
        Kind::Scalar(_) => Vec::new(),
        Kind::Seq(items) => items.clone(),
        Kind::Map(pairs) => pairs.iter().flat_map(|&(k, v)| [k, v]).collect(),
    }
}

/// For each node, whether a cycle can be reached from it: a depth-first walk (iterative, so deep
/// documents cannot overflow the stack) where an edge back to a node still open closes a cycle,
/// and a node reaches one when any of its children does.
fn reaches_cycle(nodes: &[Node]) -> Vec<bool> {
    #[derive(Clone, Copy, PartialEq)]
    enum Seen {
        New,
        Open,
        Done,
    }
    let mut seen = vec![Seen::New; nodes.len()];
    let mut reach = vec![false; nodes.len()];
    for start in 0..nodes.len() {
        if seen[start] != Seen::New {
            continue;
        }
        seen[start] = Seen::Open;
        let mut stack = vec![(start, children(&nodes[start]), 0usize)];
        while let Some((id, kids, next)) = stack.last_mut() {
            let id = *id;
            let Some(&kid) = kids.get(*next) else {
                seen[id] = Seen::Done;
                stack.pop();
                if let Some((parent, _, _)) = stack.last() {
                    reach[*parent] |= reach[id];
                }
                continue;
            };
            *next += 1;
            match seen[kid] {
                Seen::Open => reach[id] = true,
                Seen::Done => reach[id] |= reach[kid],
                Seen::New => {
                    seen[kid] = Seen::Open;
                    stack.push((kid, children(&nodes[kid]), 0));
                }
            }
        }
    }
    reach
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::WORDS;

    #[test]
    fn aliases_share_nodes_and_a_self_reference_is_a_cycle() {
        let doc = crate::tests::load("a: &x [1, *x]\nb: &y [2]\nc: *y\n");
        let Kind::Map(pairs) = &doc.nodes[doc.root].kind else {
            panic!("root is a mapping")
        };
        let (a, b, c) = (pairs[0].1, pairs[1].1, pairs[2].1);
        assert_eq!(b, c, "an alias is the anchored node itself");
        assert!(doc.reaches_cycle[a] && doc.reaches_cycle[doc.root]);
        assert!(!doc.reaches_cycle[b]);
    }

    #[test]
    fn what_pyyaml_refuses_is_an_error_at_its_place() {
        for (text, want) in [
            (
                "a: &x 1\nb: &x 2\n",
                "t.yaml:2:4: duplicate anchor &x (first defined at line 1, column 4)",
            ),
            ("a: *x\n", "t.yaml:1:4: alias *x to an unknown anchor"),
            (
                "- [1, 2]\t\n",
                "t.yaml:1:9: found character '\\t' that cannot start any token",
            ),
            ("a: 1\n---\nb: 2\n", "t.yaml:2:1: a second YAML document"),
        ] {
            let err = format!("{:#}", compose(text, "t.yaml", WORDS).expect_err(text));
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn a_stream_without_a_document_is_none_as_safe_load_returns_none() {
        for text in ["", "# only a comment\n", "\n\n"] {
            assert!(
                compose(text, "t.yaml", WORDS).expect(text).is_none(),
                "{text:?}"
            );
        }
        assert!(compose("---\n", "t.yaml", WORDS).expect("---").is_some());
    }

    #[test]
    fn where_the_port_refuses_what_pyyaml_reads_it_speaks_in_the_callers_words() {
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        let surrogate = "a: \"\\ud800\"\n";
        for (text, want) in [
            (
                deep.as_str(),
                "PyYAML may read it up to its recursion limit, the reader refuses it",
            ),
            (surrogate, "and the reader cannot copy it into a copy;"),
        ] {
            let err = format!("{:#}", compose(text, "t.yaml", WORDS).expect_err(want));
            assert!(err.contains(want), "{err}");
        }
        let err = prepare(b"a: \xff\n", "t.yaml", WORDS).expect_err("not UTF-8");
        assert!(
            format!("{err:#}").ends_with("save the file as UTF-8"),
            "{err:#}"
        );
    }
}
