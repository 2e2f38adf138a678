//! PyYAML's Parser (`yaml/parser.py`, PyYAML 6.0), ported state by state over [`crate::scanner`]'s
//! tokens: the same events, the same tag handles, the same errors. Its grammar (from parser.py):
//!
//! ```text
//! stream            ::= STREAM-START implicit_document? explicit_document* STREAM-END
//! implicit_document ::= block_node DOCUMENT-END*
//! explicit_document ::= DIRECTIVE* DOCUMENT-START block_node? DOCUMENT-END*
//! block_node        ::= ALIAS | properties block_content? | block_content
//! flow_node         ::= ALIAS | properties flow_content? | flow_content
//! ```

use crate::scanner::{error, Directive, Mark, Result, Scanner, Tok, Token};
use crate::Words;
use std::collections::HashMap;

/// `tag:yaml.org,2002:`, what `!!` stands for.
const YAML_PREFIX: &str = "tag:yaml.org,2002:";

#[derive(Debug, Clone, PartialEq)]
pub enum Ev {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias(String),
    /// `plain_implicit` is PyYAML's `implicit[0]`: the scalar's tag is resolved from its text.
    Scalar {
        anchor: Option<String>,
        tag: Option<String>,
        plain_implicit: bool,
        value: String,
    },
    SequenceStart {
        anchor: Option<String>,
        tag: Option<String>,
        flow: bool,
    },
    SequenceEnd,
    MappingStart {
        anchor: Option<String>,
        tag: Option<String>,
        flow: bool,
    },
    MappingEnd,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub ev: Ev,
    pub start: Mark,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    StreamStart,
    ImplicitDocumentStart,
    DocumentStart,
    DocumentEnd,
    DocumentContent,
    BlockNode,
    BlockSequenceFirstEntry,
    BlockSequenceEntry,
    IndentlessSequenceEntry,
    BlockMappingFirstKey,
    BlockMappingKey,
    BlockMappingValue,
    FlowSequenceFirstEntry,
    FlowSequenceEntry,
    FlowSequenceEntryMappingKey,
    FlowSequenceEntryMappingValue,
    FlowSequenceEntryMappingEnd,
    FlowMappingFirstKey,
    FlowMappingKey,
    FlowMappingValue,
    FlowMappingEmptyValue,
}

#[derive(Debug)]
pub struct Parser {
    scanner: Scanner,
    tag_handles: HashMap<String, String>,
    states: Vec<State>,
    marks: Vec<Mark>,
    state: Option<State>,
}

/// A node's properties: its anchor, and its tag with the handle expanded.
struct Properties {
    anchor: Option<String>,
    tag: Option<String>,
}

impl Properties {
    fn scalar(self, plain_implicit: bool, value: String) -> Ev {
        Ev::Scalar {
            anchor: self.anchor,
            tag: self.tag,
            plain_implicit,
            value,
        }
    }

    fn sequence(self, flow: bool) -> Ev {
        Ev::SequenceStart {
            anchor: self.anchor,
            tag: self.tag,
            flow,
        }
    }

    fn mapping(self, flow: bool) -> Ev {
        Ev::MappingStart {
            anchor: self.anchor,
            tag: self.tag,
            flow,
        }
    }
}

/// The name an ANCHOR token carries.
fn anchor_name(tok: Tok) -> Option<String> {
    match tok {
        Tok::Anchor(name) => Some(name),
        _ => None,
    }
}

fn default_tags() -> HashMap<String, String> {
    HashMap::from([
        ("!".to_owned(), "!".to_owned()),
        ("!!".to_owned(), YAML_PREFIX.to_owned()),
    ])
}

impl Parser {
    pub fn new(text: &str, words: Words) -> Self {
        Parser {
            scanner: Scanner::new(text, words),
            tag_handles: HashMap::new(),
            states: Vec::new(),
            marks: Vec::new(),
            state: Some(State::StreamStart),
        }
    }

    /// The next event; `None` after the stream's end.
    pub fn next_event(&mut self) -> Result<Option<Event>> {
        match self.state {
            None => Ok(None),
            Some(state) => self.run(state).map(Some),
        }
    }

    fn peek(&mut self) -> Result<&Token> {
        let words = self.scanner.words();
        self.scanner.peek_token()?.ok_or_else(|| exhausted(words))
    }

    fn check(&mut self, pred: impl Fn(&Tok) -> bool) -> Result<bool> {
        Ok(pred(&self.peek()?.tok))
    }

    fn take(&mut self) -> Result<Token> {
        let words = self.scanner.words();
        self.scanner.get_token()?.ok_or_else(|| exhausted(words))
    }

    fn pop_state(&mut self) -> Option<State> {
        self.states.pop()
    }

    /// One step of the state machine: the event that `state` produces, each state a method named
    /// as PyYAML's `parse_*` for it.
    fn run(&mut self, state: State) -> Result<Event> {
        match state {
            State::StreamStart => self.parse_stream_start(),
            State::ImplicitDocumentStart => self.parse_implicit_document_start(),
            State::DocumentStart => self.parse_document_start(),
            State::DocumentEnd => self.parse_document_end(),
            State::DocumentContent => self.parse_document_content(),
            State::BlockNode => self.parse_node(true, false),
            State::BlockSequenceFirstEntry => self.parse_block_sequence_first_entry(),
            State::BlockSequenceEntry => self.parse_block_sequence_entry(),
            State::IndentlessSequenceEntry => self.parse_indentless_sequence_entry(),
            State::BlockMappingFirstKey => self.parse_block_mapping_first_key(),
            State::BlockMappingKey => self.parse_block_mapping_key(),
            State::BlockMappingValue => self.parse_block_mapping_value(),
            State::FlowSequenceFirstEntry => self.parse_flow_sequence_first_entry(),
            State::FlowSequenceEntry => self.parse_flow_sequence_entry(false),
            State::FlowSequenceEntryMappingKey => self.parse_flow_sequence_entry_mapping_key(),
            State::FlowSequenceEntryMappingValue => self.parse_flow_sequence_entry_mapping_value(),
            State::FlowSequenceEntryMappingEnd => self.parse_flow_sequence_entry_mapping_end(),
            State::FlowMappingFirstKey => self.parse_flow_mapping_first_key(),
            State::FlowMappingKey => self.parse_flow_mapping_key(false),
            State::FlowMappingValue => self.parse_flow_mapping_value(),
            State::FlowMappingEmptyValue => self.parse_flow_mapping_empty_value(),
        }
    }

    fn parse_stream_start(&mut self) -> Result<Event> {
        let token = self.take()?;
        self.state = Some(State::ImplicitDocumentStart);
        Ok(event(Ev::StreamStart, token.start))
    }

    /// A document without `---`: it starts at its first node, with the default tag handles.
    fn parse_implicit_document_start(&mut self) -> Result<Event> {
        if self.check(|t| matches!(t, Tok::Directive(..) | Tok::DocumentStart | Tok::StreamEnd))? {
            return self.parse_document_start();
        }
        self.tag_handles = default_tags();
        let start = self.peek()?.start;
        self.states.push(State::DocumentEnd);
        self.state = Some(State::BlockNode);
        Ok(event(Ev::DocumentStart, start))
    }

    fn parse_document_start(&mut self) -> Result<Event> {
        while self.check(|t| matches!(t, Tok::DocumentEnd))? {
            self.take()?;
        }
        if self.check(|t| matches!(t, Tok::StreamEnd))? {
            let token = self.take()?;
            self.state = None;
            return Ok(event(Ev::StreamEnd, token.start));
        }
        let start = self.peek()?.start;
        self.process_directives()?;
        if !self.check(|t| matches!(t, Tok::DocumentStart))? {
            let token = self.peek()?;
            return Err(error(
                None,
                format!(
                    "expected '<document start>', but found '{}'",
                    token.tok.id()
                ),
                token.start,
            ));
        }
        self.take()?;
        self.states.push(State::DocumentEnd);
        self.state = Some(State::DocumentContent);
        Ok(event(Ev::DocumentStart, start))
    }

    fn parse_document_end(&mut self) -> Result<Event> {
        let start = self.peek()?.start;
        if self.check(|t| matches!(t, Tok::DocumentEnd))? {
            self.take()?;
        }
        self.state = Some(State::DocumentStart);
        Ok(event(Ev::DocumentEnd, start))
    }

    /// The node after `---`, or an empty scalar where the document ends without one.
    fn parse_document_content(&mut self) -> Result<Event> {
        if self.check(|t| {
            matches!(
                t,
                Tok::Directive(..) | Tok::DocumentStart | Tok::DocumentEnd | Tok::StreamEnd
            )
        })? {
            let mark = self.peek()?.start;
            self.state = self.pop_state();
            return Ok(empty_scalar(mark));
        }
        self.parse_node(true, false)
    }

    fn process_directives(&mut self) -> Result<()> {
        let mut yaml_version = false;
        self.tag_handles = HashMap::new();
        while self.check(|t| matches!(t, Tok::Directive(..)))? {
            let token = self.take()?;
            match token.tok {
                Tok::Directive(_, Directive::Yaml(major, _)) => {
                    if yaml_version {
                        return Err(error(None, "found duplicate YAML directive", token.start));
                    }
                    if major != 1 {
                        return Err(error(
                            None,
                            "found incompatible YAML document (version 1.* is required)",
                            token.start,
                        ));
                    }
                    yaml_version = true;
                }
                Tok::Directive(_, Directive::Tag(handle, prefix)) => {
                    if self.tag_handles.contains_key(&handle) {
                        return Err(error(
                            None,
                            format!("duplicate tag handle {handle:?}"),
                            token.start,
                        ));
                    }
                    self.tag_handles.insert(handle, prefix);
                }
                _ => {}
            }
        }
        for (handle, prefix) in default_tags() {
            self.tag_handles.entry(handle).or_insert(prefix);
        }
        Ok(())
    }

    /// `block_node` or `flow_node`: an alias, or properties then content; `indentless_sequence`
    /// where a block mapping's value may be a sequence at the key's own indentation.
    fn parse_node(&mut self, block: bool, indentless_sequence: bool) -> Result<Event> {
        if self.check(|t| matches!(t, Tok::Alias(_)))? {
            let token = self.take()?;
            self.state = self.pop_state();
            let Tok::Alias(name) = token.tok else {
                unreachable!("checked above")
            };
            return Ok(event(Ev::Alias(name), token.start));
        }
        let (properties, start) = self.parse_properties()?;
        if indentless_sequence && self.check(|t| matches!(t, Tok::BlockEntry))? {
            self.state = Some(State::IndentlessSequenceEntry);
            return Ok(event(properties.sequence(false), start));
        }
        self.parse_content(properties, start, block)
    }

    /// `properties`: an anchor and a tag, in either order, each optional; with the mark where the
    /// node starts (its first property, else the next token).
    fn parse_properties(&mut self) -> Result<(Properties, Mark)> {
        let mut anchor = None;
        let mut tag = None;
        let mut start = None;
        if self.check(|t| matches!(t, Tok::Anchor(_)))? {
            let token = self.take()?;
            start = Some(token.start);
            anchor = anchor_name(token.tok);
            if self.check(|t| matches!(t, Tok::Tag(..)))? {
                tag = Some(self.take()?);
            }
        } else if self.check(|t| matches!(t, Tok::Tag(..)))? {
            let token = self.take()?;
            start = Some(token.start);
            tag = Some(token);
            if self.check(|t| matches!(t, Tok::Anchor(_)))? {
                anchor = anchor_name(self.take()?.tok);
            }
        }
        let start = match start {
            Some(s) => s,
            None => self.peek()?.start,
        };
        let tag = match tag {
            Some(token) => self.expand_tag(token, start)?,
            None => None,
        };
        Ok((Properties { anchor, tag }, start))
    }

    /// A TAG token as the node's tag: `!handle!suffix` with the handle's prefix for the handle.
    fn expand_tag(&mut self, token: Token, start: Mark) -> Result<Option<String>> {
        match token.tok {
            Tok::Tag(Some(handle), suffix) => match self.tag_handles.get(&handle) {
                Some(prefix) => Ok(Some(format!("{prefix}{suffix}"))),
                None => {
                    // As in PyYAML, a scanner error in the next token comes before this one.
                    self.peek()?;
                    Err(error(
                        Some(("while parsing a node", start)),
                        format!("found undefined tag handle {handle:?}"),
                        token.start,
                    ))
                }
            },
            Tok::Tag(None, suffix) => Ok(Some(suffix)),
            _ => Ok(None),
        }
    }

    /// The node's content after its properties: a scalar or the start of a collection, or an empty
    /// scalar where there are properties and no content.
    fn parse_content(&mut self, properties: Properties, start: Mark, block: bool) -> Result<Event> {
        let (ev, state) = match self.peek()?.tok.clone() {
            Tok::Scalar(value, plain, _) => {
                self.take()?;
                let tag = properties.tag.as_deref();
                let plain_implicit = (plain && tag.is_none()) || tag == Some("!");
                (properties.scalar(plain_implicit, value), self.pop_state())
            }
            Tok::FlowSequenceStart => (
                properties.sequence(true),
                Some(State::FlowSequenceFirstEntry),
            ),
            Tok::FlowMappingStart => (properties.mapping(true), Some(State::FlowMappingFirstKey)),
            Tok::BlockSequenceStart if block => (
                properties.sequence(false),
                Some(State::BlockSequenceFirstEntry),
            ),
            Tok::BlockMappingStart if block => {
                (properties.mapping(false), Some(State::BlockMappingFirstKey))
            }
            _ if properties.anchor.is_some() || properties.tag.is_some() => {
                let implicit = properties.tag.as_deref().is_none_or(|t| t == "!");
                (properties.scalar(implicit, String::new()), self.pop_state())
            }
            other => {
                let what = if block {
                    "while parsing a block node"
                } else {
                    "while parsing a flow node"
                };
                let at = self.peek()?.start;
                return Err(error(
                    Some((what, start)),
                    format!("expected the node content, but found '{}'", other.id()),
                    at,
                ));
            }
        };
        self.state = state;
        Ok(event(ev, start))
    }

    fn parse_block_sequence_first_entry(&mut self) -> Result<Event> {
        let token = self.take()?;
        self.marks.push(token.start);
        self.parse_block_sequence_entry()
    }

    fn parse_block_sequence_entry(&mut self) -> Result<Event> {
        if self.check(|t| matches!(t, Tok::BlockEntry))? {
            let token = self.take()?;
            if !self.check(|t| matches!(t, Tok::BlockEntry | Tok::BlockEnd))? {
                self.states.push(State::BlockSequenceEntry);
                return self.parse_node(true, false);
            }
            self.state = Some(State::BlockSequenceEntry);
            return Ok(empty_scalar(token.end));
        }
        self.expect_block_end("while parsing a block collection", Ev::SequenceEnd)
    }

    /// A sequence's `- ` entries at a mapping key's own indentation (`key:\n- a\n- b`), which have
    /// no BLOCK-SEQUENCE-START and end at the first token that is not `- `.
    fn parse_indentless_sequence_entry(&mut self) -> Result<Event> {
        if self.check(|t| matches!(t, Tok::BlockEntry))? {
            let token = self.take()?;
            if !self
                .check(|t| matches!(t, Tok::BlockEntry | Tok::Key | Tok::Value | Tok::BlockEnd))?
            {
                self.states.push(State::IndentlessSequenceEntry);
                return self.parse_node(true, false);
            }
            self.state = Some(State::IndentlessSequenceEntry);
            return Ok(empty_scalar(token.end));
        }
        let start = self.peek()?.start;
        self.state = self.pop_state();
        Ok(event(Ev::SequenceEnd, start))
    }

    fn parse_block_mapping_first_key(&mut self) -> Result<Event> {
        let token = self.take()?;
        self.marks.push(token.start);
        self.parse_block_mapping_key()
    }

    fn parse_block_mapping_key(&mut self) -> Result<Event> {
        if self.check(|t| matches!(t, Tok::Key))? {
            let token = self.take()?;
            if !self.check(|t| matches!(t, Tok::Key | Tok::Value | Tok::BlockEnd))? {
                self.states.push(State::BlockMappingValue);
                return self.parse_node(true, true);
            }
            self.state = Some(State::BlockMappingValue);
            return Ok(empty_scalar(token.end));
        }
        self.expect_block_end("while parsing a block mapping", Ev::MappingEnd)
    }

    /// A block mapping's value, which may be an indentless sequence.
    fn parse_block_mapping_value(&mut self) -> Result<Event> {
        self.parse_value(
            |t| matches!(t, Tok::Key | Tok::Value | Tok::BlockEnd),
            State::BlockMappingKey,
            true,
        )
    }

    /// The end of a block collection: a BLOCK-END token, or PyYAML's `expected <block end>`.
    fn expect_block_end(&mut self, context: &str, end: Ev) -> Result<Event> {
        if !self.check(|t| matches!(t, Tok::BlockEnd))? {
            let opened = self.marks.last().copied();
            let token = self.peek()?;
            let opened = opened.unwrap_or(token.start);
            return Err(error(
                Some((context, opened)),
                format!("expected <block end>, but found '{}'", token.tok.id()),
                token.start,
            ));
        }
        let token = self.take()?;
        self.state = self.pop_state();
        self.marks.pop();
        Ok(event(end, token.start))
    }

    fn parse_flow_sequence_first_entry(&mut self) -> Result<Event> {
        let token = self.take()?;
        self.marks.push(token.start);
        self.parse_flow_sequence_entry(true)
    }

    fn parse_flow_sequence_entry(&mut self, first: bool) -> Result<Event> {
        if !self.check(|t| matches!(t, Tok::FlowSequenceEnd))? {
            if !first {
                if self.check(|t| matches!(t, Tok::FlowEntry))? {
                    self.take()?;
                } else {
                    return Err(self.flow_error("while parsing a flow sequence", "']'"));
                }
            }
            if self.check(|t| matches!(t, Tok::Key))? {
                let start = self.peek()?.start;
                self.state = Some(State::FlowSequenceEntryMappingKey);
                return Ok(event(
                    Ev::MappingStart {
                        anchor: None,
                        tag: None,
                        flow: true,
                    },
                    start,
                ));
            } else if !self.check(|t| matches!(t, Tok::FlowSequenceEnd))? {
                self.states.push(State::FlowSequenceEntry);
                return self.parse_node(false, false);
            }
        }
        let token = self.take()?;
        self.state = self.pop_state();
        self.marks.pop();
        Ok(event(Ev::SequenceEnd, token.start))
    }

    /// The key of a single-pair mapping inside a flow sequence (`[a: 1]`), after its KEY token.
    fn parse_flow_sequence_entry_mapping_key(&mut self) -> Result<Event> {
        let token = self.take()?;
        if !self.check(|t| matches!(t, Tok::Value | Tok::FlowEntry | Tok::FlowSequenceEnd))? {
            self.states.push(State::FlowSequenceEntryMappingValue);
            return self.parse_node(false, false);
        }
        self.state = Some(State::FlowSequenceEntryMappingValue);
        Ok(empty_scalar(token.end))
    }

    /// The value of that single-pair mapping.
    fn parse_flow_sequence_entry_mapping_value(&mut self) -> Result<Event> {
        self.parse_value(
            |t| matches!(t, Tok::FlowEntry | Tok::FlowSequenceEnd),
            State::FlowSequenceEntryMappingEnd,
            false,
        )
    }

    fn parse_flow_sequence_entry_mapping_end(&mut self) -> Result<Event> {
        self.state = Some(State::FlowSequenceEntry);
        let start = self.peek()?.start;
        Ok(event(Ev::MappingEnd, start))
    }

    fn parse_flow_mapping_first_key(&mut self) -> Result<Event> {
        let token = self.take()?;
        self.marks.push(token.start);
        self.parse_flow_mapping_key(true)
    }

    fn parse_flow_mapping_key(&mut self, first: bool) -> Result<Event> {
        if !self.check(|t| matches!(t, Tok::FlowMappingEnd))? {
            if !first {
                if self.check(|t| matches!(t, Tok::FlowEntry))? {
                    self.take()?;
                } else {
                    return Err(self.flow_error("while parsing a flow mapping", "'}'"));
                }
            }
            if self.check(|t| matches!(t, Tok::Key))? {
                let token = self.take()?;
                if !self
                    .check(|t| matches!(t, Tok::Value | Tok::FlowEntry | Tok::FlowMappingEnd))?
                {
                    self.states.push(State::FlowMappingValue);
                    return self.parse_node(false, false);
                }
                self.state = Some(State::FlowMappingValue);
                return Ok(empty_scalar(token.end));
            } else if !self.check(|t| matches!(t, Tok::FlowMappingEnd))? {
                self.states.push(State::FlowMappingEmptyValue);
                return self.parse_node(false, false);
            }
        }
        let token = self.take()?;
        self.state = self.pop_state();
        self.marks.pop();
        Ok(event(Ev::MappingEnd, token.start))
    }

    /// A flow mapping's value.
    fn parse_flow_mapping_value(&mut self) -> Result<Event> {
        self.parse_value(
            |t| matches!(t, Tok::FlowEntry | Tok::FlowMappingEnd),
            State::FlowMappingKey,
            false,
        )
    }

    /// The value of a flow mapping entry written without `:` (`{a, b: 1}`): an empty scalar.
    fn parse_flow_mapping_empty_value(&mut self) -> Result<Event> {
        self.state = Some(State::FlowMappingKey);
        let mark = self.peek()?.start;
        Ok(empty_scalar(mark))
    }

    /// A mapping's value: after a VALUE token (`:`), a node, or an empty scalar where the next
    /// token (one that `ends` the value) says there is none; without a `:`, an empty scalar. The
    /// parse goes on in `next`. In a block mapping (`block`) the value may be an indentless
    /// sequence.
    fn parse_value(&mut self, ends: fn(&Tok) -> bool, next: State, block: bool) -> Result<Event> {
        if self.check(|t| matches!(t, Tok::Value))? {
            let token = self.take()?;
            if !self.check(ends)? {
                self.states.push(next);
                return self.parse_node(block, block);
            }
            self.state = Some(next);
            return Ok(empty_scalar(token.end));
        }
        self.state = Some(next);
        let mark = self.peek()?.start;
        Ok(empty_scalar(mark))
    }

    fn flow_error(&mut self, context: &str, closer: &str) -> crate::scanner::YamlError {
        let opened = self.marks.last().copied();
        match self.peek() {
            Ok(token) => error(
                Some((context, opened.unwrap_or(token.start))),
                format!("expected ',' or {closer}, but got '{}'", token.tok.id()),
                token.start,
            ),
            Err(e) => e,
        }
    }
}

/// No token where the grammar needs one: the scanner always ends the stream with STREAM-END, which
/// only the state that ends the parse takes, so this is a bug, reported rather than a panic.
fn exhausted(words: Words) -> crate::scanner::YamlError {
    error(
        None,
        format!(
            "the token stream ended early (a bug in {}'s parser)",
            words.program
        ),
        Mark::default(),
    )
}

fn event(ev: Ev, start: Mark) -> Event {
    Event { ev, start }
}

/// `process_empty_scalar`: a plain empty scalar, which resolves to null.
fn empty_scalar(mark: Mark) -> Event {
    event(
        Ev::Scalar {
            anchor: None,
            tag: None,
            plain_implicit: true,
            value: String::new(),
        },
        mark,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Result<Vec<Ev>> {
        let mut p = Parser::new(text, crate::tests::WORDS);
        let mut out = Vec::new();
        while let Some(e) = p.next_event()? {
            out.push(e.ev);
        }
        Ok(out)
    }

    fn scalar(value: &str) -> Ev {
        Ev::Scalar {
            anchor: None,
            tag: None,
            plain_implicit: true,
            value: value.into(),
        }
    }

    #[test]
    fn a_flow_sequence_continued_less_indented_is_one_sequence() {
        let evs = events("s:\n    - [1024,\n  512]\n").expect("PyYAML reads it");
        let start = Ev::SequenceStart {
            anchor: None,
            tag: None,
            flow: true,
        };
        let at = evs
            .iter()
            .position(|e| *e == start)
            .expect("a flow sequence");
        assert_eq!(
            evs[at + 1..at + 4],
            [scalar("1024"), scalar("512"), Ev::SequenceEnd]
        );
    }

    #[test]
    fn what_pyyaml_refuses_is_an_error_with_its_words() {
        for (text, problem) in [
            (": 4\n", "expected <block end>, but found ':'"),
            ("- [1?]\n", "expected ',' or ']', but got '?'"),
            ("- [1, :]\n", "expected the node content, but found ':'"),
        ] {
            let err = events(text).expect_err(text);
            assert_eq!(err.problem, problem, "{text:?}");
        }
    }

    #[test]
    fn tags_expand_through_their_handles() {
        let evs =
            events("%TAG !e! tag:example.com,2000:\n--- !e!x [!!int 1, ! 2]\n").expect("parses");
        assert!(
            matches!(&evs[2], Ev::SequenceStart { tag: Some(t), .. } if t == "tag:example.com,2000:x")
        );
        assert!(
            matches!(&evs[3], Ev::Scalar { tag: Some(t), plain_implicit: false, .. } if t == "tag:yaml.org,2002:int")
        );
        assert!(
            matches!(&evs[4], Ev::Scalar { tag: Some(t), plain_implicit: true, .. } if t == "!")
        );
    }
}
