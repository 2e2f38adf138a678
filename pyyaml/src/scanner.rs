//! PyYAML's Reader and Scanner (`yaml/reader.py`, `yaml/scanner.py`, PyYAML 6.0), ported function by
//! function with the same names, so that the tokens, and so what `yaml.safe_load` accepts and
//! refuses, are PyYAML's own. PyYAML is looser than the YAML spec in places (flow collections and
//! quoted scalars ignore indentation; `]#c` ends a flow sequence and starts a comment) and stricter
//! in others (a tab may not separate tokens; `?`, `|` and `>` cannot start a scalar in a flow
//! collection); a spec parser gets those cases wrong both ways, a port gets them right.
//!
//! The text comes in as `composer::prepare` leaves it: checked for what PyYAML's Reader refuses, with
//! `\r\n` and `\r` already folded to `\n`, as Python's text-mode `open` hands it over.

use crate::Words;
use std::collections::VecDeque;

/// A position in the text, 0-based like PyYAML's `Mark` (which prints them 1-based).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    pub index: usize,
    pub line: usize,
    pub column: usize,
}

/// A `MarkedYAMLError`: what is wrong and where, and what was being read when it was found.
#[derive(Debug, Clone)]
pub struct YamlError {
    pub context: Option<(String, Mark)>,
    pub problem: String,
    pub mark: Mark,
}

pub type Result<T> = std::result::Result<T, YamlError>;

pub fn error(context: Option<(&str, Mark)>, problem: impl Into<String>, mark: Mark) -> YamlError {
    YamlError {
        context: context.map(|(what, at)| (what.to_owned(), at)),
        problem: problem.into(),
        mark,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Directive {
    Yaml(u64, u64),
    Tag(String, String),
    Other,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    StreamStart,
    StreamEnd,
    Directive(String, Directive),
    DocumentStart,
    DocumentEnd,
    BlockSequenceStart,
    BlockMappingStart,
    BlockEnd,
    FlowSequenceStart,
    FlowMappingStart,
    FlowSequenceEnd,
    FlowMappingEnd,
    BlockEntry,
    FlowEntry,
    Key,
    Value,
    Alias(String),
    Anchor(String),
    /// (handle, suffix); no handle for `!<uri>` and a lone `!`.
    Tag(Option<String>, String),
    /// value, plain, style (`'`, `"`, `|`, `>`; none for plain).
    Scalar(String, bool, Option<char>),
}

impl Tok {
    /// PyYAML's token `id`, as its error messages name tokens.
    pub fn id(&self) -> &'static str {
        match self {
            Tok::StreamStart => "<stream start>",
            Tok::StreamEnd => "<stream end>",
            Tok::Directive(..) => "<directive>",
            Tok::DocumentStart => "<document start>",
            Tok::DocumentEnd => "<document end>",
            Tok::BlockSequenceStart => "<block sequence start>",
            Tok::BlockMappingStart => "<block mapping start>",
            Tok::BlockEnd => "<block end>",
            Tok::FlowSequenceStart => "[",
            Tok::FlowMappingStart => "{",
            Tok::FlowSequenceEnd => "]",
            Tok::FlowMappingEnd => "}",
            Tok::BlockEntry => "-",
            Tok::FlowEntry => ",",
            Tok::Key => "?",
            Tok::Value => ":",
            Tok::Alias(_) => "<alias>",
            Tok::Anchor(_) => "<anchor>",
            Tok::Tag(..) => "<tag>",
            Tok::Scalar(..) => "<scalar>",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub start: Mark,
    pub end: Mark,
}

#[derive(Debug, Clone, Copy)]
struct SimpleKey {
    token_number: usize,
    required: bool,
    index: usize,
    line: usize,
    column: usize,
    mark: Mark,
}

/// `'\0 \t\r\n\x85\u2028\u2029'`: what ends most tokens.
fn blank_or_end(c: char) -> bool {
    matches!(
        c,
        '\0' | ' ' | '\t' | '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// `'\r\n\x85\u2028\u2029'`.
fn line_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// `'\0\r\n\x85\u2028\u2029'`.
fn break_or_end(c: char) -> bool {
    c == '\0' || line_break(c)
}

/// `'\0 \r\n\x85\u2028\u2029'`.
fn space_break_or_end(c: char) -> bool {
    c == ' ' || break_or_end(c)
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

#[derive(Debug)]
pub struct Scanner {
    /// The caller's words, for the lone surrogate this port cannot carry.
    words: Words,
    // Reader
    chars: Vec<char>,
    pointer: usize,
    line: usize,
    column: usize,
    // Scanner
    done: bool,
    flow_level: isize,
    tokens: VecDeque<Token>,
    tokens_taken: usize,
    indent: isize,
    indents: Vec<isize>,
    allow_simple_key: bool,
    /// PyYAML's `possible_simple_keys` dict: at most one per flow level, a handful at most.
    possible_simple_keys: Vec<(isize, SimpleKey)>,
}

impl Scanner {
    pub fn new(text: &str, words: Words) -> Self {
        let mut chars: Vec<char> = text.chars().collect();
        chars.push('\0');
        let mut s = Scanner {
            words,
            chars,
            pointer: 0,
            line: 0,
            column: 0,
            done: false,
            flow_level: 0,
            tokens: VecDeque::new(),
            tokens_taken: 0,
            indent: -1,
            indents: Vec::new(),
            allow_simple_key: true,
            possible_simple_keys: Vec::new(),
        };
        let mark = s.mark();
        s.tokens.push_back(Token {
            tok: Tok::StreamStart,
            start: mark,
            end: mark,
        });
        s
    }

    // Reader.

    fn peek(&self, i: usize) -> char {
        self.chars.get(self.pointer + i).copied().unwrap_or('\0')
    }

    /// Whether the next characters are `text`.
    fn looking_at(&self, text: &str) -> bool {
        text.chars().enumerate().all(|(i, c)| self.peek(i) == c)
    }

    /// A document separator (`---` or `...` then a blank) at the current position.
    fn at_separator(&self) -> bool {
        (self.looking_at("---") || self.looking_at("...")) && blank_or_end(self.peek(3))
    }

    /// Appends the next `length` characters to `out` and moves past them.
    fn take(&mut self, length: usize, out: &mut String) {
        let end = (self.pointer + length).min(self.chars.len());
        out.extend(&self.chars[self.pointer.min(end)..end]);
        self.forward(length);
    }

    fn prefix(&self, length: usize) -> String {
        let end = (self.pointer + length).min(self.chars.len());
        self.chars[self.pointer.min(end)..end].iter().collect()
    }

    fn forward(&mut self, length: usize) {
        for _ in 0..length {
            let Some(&ch) = self.chars.get(self.pointer) else {
                return;
            };
            self.pointer += 1;
            if matches!(ch, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
                || (ch == '\r' && self.peek(0) != '\n')
            {
                self.line += 1;
                self.column = 0;
            } else if ch != '\u{feff}' {
                self.column += 1;
            }
        }
    }

    fn mark(&self) -> Mark {
        Mark {
            index: self.pointer,
            line: self.line,
            column: self.column,
        }
    }

    fn col(&self) -> isize {
        self.column as isize
    }

    // Public methods.

    /// The next token, left in the queue; `None` after the stream's end was taken.
    pub fn peek_token(&mut self) -> Result<Option<&Token>> {
        while self.need_more_tokens()? {
            self.fetch_more_tokens()?;
        }
        Ok(self.tokens.front())
    }

    /// The caller's words this scanner was made with.
    pub fn words(&self) -> Words {
        self.words
    }

    /// Takes the next token; `None` after the stream's end was taken.
    pub fn get_token(&mut self) -> Result<Option<Token>> {
        while self.need_more_tokens()? {
            self.fetch_more_tokens()?;
        }
        let token = self.tokens.pop_front();
        if token.is_some() {
            self.tokens_taken += 1;
        }
        Ok(token)
    }

    // Private methods.

    fn need_more_tokens(&mut self) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        if self.tokens.is_empty() {
            return Ok(true);
        }
        self.stale_possible_simple_keys()?;
        Ok(self.next_possible_simple_key() == Some(self.tokens_taken))
    }

    fn fetch_more_tokens(&mut self) -> Result<()> {
        self.scan_to_next_token();
        self.stale_possible_simple_keys()?;
        self.unwind_indent(self.col());
        let ch = self.peek(0);
        match ch {
            '\0' => return self.fetch_stream_end(),
            '%' if self.check_directive() => return self.fetch_directive(),
            '-' if self.check_document_start() => {
                return self.fetch_document_indicator(Tok::DocumentStart)
            }
            '.' if self.check_document_end() => {
                return self.fetch_document_indicator(Tok::DocumentEnd)
            }
            '[' => return self.fetch_flow_collection_start(Tok::FlowSequenceStart),
            '{' => return self.fetch_flow_collection_start(Tok::FlowMappingStart),
            ']' => return self.fetch_flow_collection_end(Tok::FlowSequenceEnd),
            '}' => return self.fetch_flow_collection_end(Tok::FlowMappingEnd),
            ',' => return self.fetch_flow_entry(),
            '-' if self.check_block_entry() => return self.fetch_block_entry(),
            '?' if self.check_key() => return self.fetch_key(),
            ':' if self.check_value() => return self.fetch_value(),
            '*' => return self.fetch_anchor_token(true),
            '&' => return self.fetch_anchor_token(false),
            '!' => return self.fetch_tag(),
            '|' | '>' if self.flow_level == 0 => return self.fetch_block_scalar(ch),
            '\'' | '"' => return self.fetch_flow_scalar(ch),
            _ => {}
        }
        if self.check_plain() {
            return self.fetch_plain();
        }
        Err(error(
            Some(("while scanning for the next token", self.mark())),
            format!(
                "found character {} that cannot start any token",
                py_repr(ch)
            ),
            self.mark(),
        ))
    }

    // Simple keys treatment.

    fn next_possible_simple_key(&self) -> Option<usize> {
        self.possible_simple_keys
            .iter()
            .map(|(_, k)| k.token_number)
            .min()
    }

    /// Drops the possible simple keys that can no longer be keys: a simple key is on one line
    /// and at most 1024 characters long. A required one (at the block indentation) is an error.
    fn stale_possible_simple_keys(&mut self) -> Result<()> {
        let (line, pointer) = (self.line, self.pointer);
        let stale = |k: &SimpleKey| k.line != line || pointer - k.index > 1024;
        if let Some((_, key)) = self
            .possible_simple_keys
            .iter()
            .find(|(_, k)| k.required && stale(k))
        {
            return Err(error(
                Some(("while scanning a simple key", key.mark)),
                "could not find expected ':'",
                self.mark(),
            ));
        }
        self.possible_simple_keys.retain(|(_, k)| !stale(k));
        Ok(())
    }

    fn save_possible_simple_key(&mut self) -> Result<()> {
        let required = self.flow_level == 0 && self.indent == self.col();
        if self.allow_simple_key {
            self.remove_possible_simple_key()?;
            let key = SimpleKey {
                token_number: self.tokens_taken + self.tokens.len(),
                required,
                index: self.pointer,
                line: self.line,
                column: self.column,
                mark: self.mark(),
            };
            self.possible_simple_keys.push((self.flow_level, key));
        }
        Ok(())
    }

    fn remove_possible_simple_key(&mut self) -> Result<()> {
        if let Some(key) = self.take_possible_simple_key() {
            if key.required {
                return Err(error(
                    Some(("while scanning a simple key", key.mark)),
                    "could not find expected ':'",
                    self.mark(),
                ));
            }
        }
        Ok(())
    }

    /// Removes and returns the possible simple key of the current flow level.
    fn take_possible_simple_key(&mut self) -> Option<SimpleKey> {
        let at = self
            .possible_simple_keys
            .iter()
            .position(|(level, _)| *level == self.flow_level)?;
        Some(self.possible_simple_keys.swap_remove(at).1)
    }

    // Indentation functions.

    fn unwind_indent(&mut self, column: isize) {
        if self.flow_level != 0 {
            return;
        }
        while self.indent > column {
            let mark = self.mark();
            self.indent = self.indents.pop().unwrap_or(-1);
            self.push(Tok::BlockEnd, mark, mark);
        }
    }

    fn add_indent(&mut self, column: isize) -> bool {
        if self.indent < column {
            self.indents.push(self.indent);
            self.indent = column;
            return true;
        }
        false
    }

    fn push(&mut self, tok: Tok, start: Mark, end: Mark) {
        self.tokens.push_back(Token { tok, start, end });
    }

    /// Adds a one-character-or-more token spanning `length` characters from here.
    fn push_forward(&mut self, tok: Tok, length: usize) {
        let start = self.mark();
        self.forward(length);
        let end = self.mark();
        self.push(tok, start, end);
    }

    // Fetchers.

    fn fetch_stream_end(&mut self) -> Result<()> {
        self.unwind_indent(-1);
        self.remove_possible_simple_key()?;
        self.allow_simple_key = false;
        self.possible_simple_keys.clear();
        let mark = self.mark();
        self.push(Tok::StreamEnd, mark, mark);
        self.done = true;
        Ok(())
    }

    fn fetch_directive(&mut self) -> Result<()> {
        self.unwind_indent(-1);
        self.remove_possible_simple_key()?;
        self.allow_simple_key = false;
        let token = self.scan_directive()?;
        self.tokens.push_back(token);
        Ok(())
    }

    fn fetch_document_indicator(&mut self, tok: Tok) -> Result<()> {
        self.unwind_indent(-1);
        self.remove_possible_simple_key()?;
        self.allow_simple_key = false;
        self.push_forward(tok, 3);
        Ok(())
    }

    fn fetch_flow_collection_start(&mut self, tok: Tok) -> Result<()> {
        self.save_possible_simple_key()?;
        self.flow_level += 1;
        self.allow_simple_key = true;
        self.push_forward(tok, 1);
        Ok(())
    }

    fn fetch_flow_collection_end(&mut self, tok: Tok) -> Result<()> {
        self.remove_possible_simple_key()?;
        // As in PyYAML, a stray `]` takes the level below zero; the parser refuses the `]`.
        self.flow_level -= 1;
        self.allow_simple_key = false;
        self.push_forward(tok, 1);
        Ok(())
    }

    fn fetch_flow_entry(&mut self) -> Result<()> {
        self.allow_simple_key = true;
        self.remove_possible_simple_key()?;
        self.push_forward(Tok::FlowEntry, 1);
        Ok(())
    }

    /// In block context, where a `-`, `?` or `:` starts: refuses it (`refused`) where no simple
    /// key may start, and opens a block collection (`start`) where its column deepens the indent.
    fn enter_block(&mut self, refused: &str, start: Tok) -> Result<()> {
        if self.flow_level != 0 {
            return Ok(());
        }
        if !self.allow_simple_key {
            return Err(error(None, refused, self.mark()));
        }
        if self.add_indent(self.col()) {
            let mark = self.mark();
            self.push(start, mark, mark);
        }
        Ok(())
    }

    fn fetch_block_entry(&mut self) -> Result<()> {
        self.enter_block(
            "sequence entries are not allowed here",
            Tok::BlockSequenceStart,
        )?;
        self.allow_simple_key = true;
        self.remove_possible_simple_key()?;
        self.push_forward(Tok::BlockEntry, 1);
        Ok(())
    }

    fn fetch_key(&mut self) -> Result<()> {
        self.enter_block("mapping keys are not allowed here", Tok::BlockMappingStart)?;
        self.allow_simple_key = self.flow_level == 0;
        self.remove_possible_simple_key()?;
        self.push_forward(Tok::Key, 1);
        Ok(())
    }

    fn fetch_value(&mut self) -> Result<()> {
        if let Some(key) = self.take_possible_simple_key() {
            let at = key.token_number - self.tokens_taken;
            self.tokens.insert(
                at,
                Token {
                    tok: Tok::Key,
                    start: key.mark,
                    end: key.mark,
                },
            );
            if self.flow_level == 0 && self.add_indent(key.column as isize) {
                self.tokens.insert(
                    at,
                    Token {
                        tok: Tok::BlockMappingStart,
                        start: key.mark,
                        end: key.mark,
                    },
                );
            }
            self.allow_simple_key = false;
        } else {
            self.enter_block(
                "mapping values are not allowed here",
                Tok::BlockMappingStart,
            )?;
            self.allow_simple_key = self.flow_level == 0;
            self.remove_possible_simple_key()?;
        }
        self.push_forward(Tok::Value, 1);
        Ok(())
    }

    /// PyYAML's fetch_alias, fetch_anchor, fetch_tag, fetch_flow_scalar and fetch_plain: a
    /// token that may start a simple key, scanned by `scan`, and no simple key after it.
    fn fetch_simple_key_start(
        &mut self,
        scan: impl FnOnce(&mut Self) -> Result<Token>,
    ) -> Result<()> {
        self.save_possible_simple_key()?;
        self.allow_simple_key = false;
        let token = scan(self)?;
        self.tokens.push_back(token);
        Ok(())
    }

    fn fetch_anchor_token(&mut self, alias: bool) -> Result<()> {
        self.fetch_simple_key_start(|s| s.scan_anchor(alias))
    }

    fn fetch_tag(&mut self) -> Result<()> {
        self.fetch_simple_key_start(Self::scan_tag)
    }

    fn fetch_block_scalar(&mut self, style: char) -> Result<()> {
        self.allow_simple_key = true;
        self.remove_possible_simple_key()?;
        let token = self.scan_block_scalar(style)?;
        self.tokens.push_back(token);
        Ok(())
    }

    fn fetch_flow_scalar(&mut self, style: char) -> Result<()> {
        self.fetch_simple_key_start(|s| s.scan_flow_scalar(style))
    }

    fn fetch_plain(&mut self) -> Result<()> {
        self.fetch_simple_key_start(|s| Ok(s.scan_plain()))
    }

    // Checkers.

    fn check_directive(&self) -> bool {
        self.column == 0
    }

    fn check_document_start(&self) -> bool {
        self.column == 0 && self.looking_at("---") && blank_or_end(self.peek(3))
    }

    fn check_document_end(&self) -> bool {
        self.column == 0 && self.looking_at("...") && blank_or_end(self.peek(3))
    }

    fn check_block_entry(&self) -> bool {
        blank_or_end(self.peek(1))
    }

    fn check_key(&self) -> bool {
        self.flow_level != 0 || blank_or_end(self.peek(1))
    }

    fn check_value(&self) -> bool {
        self.flow_level != 0 || blank_or_end(self.peek(1))
    }

    fn check_plain(&self) -> bool {
        let ch = self.peek(0);
        !(blank_or_end(ch) || "-?:,[]{}#&*!|>'\"%@`".contains(ch))
            || (!blank_or_end(self.peek(1))
                && (ch == '-' || (self.flow_level == 0 && (ch == '?' || ch == ':'))))
    }

    // Scanners.

    fn scan_to_next_token(&mut self) {
        if self.pointer == 0 && self.peek(0) == '\u{feff}' {
            self.forward(1);
        }
        loop {
            while self.peek(0) == ' ' {
                self.forward(1);
            }
            if self.peek(0) == '#' {
                while !break_or_end(self.peek(0)) {
                    self.forward(1);
                }
            }
            if self.scan_line_break().is_empty() {
                break;
            }
            if self.flow_level == 0 {
                self.allow_simple_key = true;
            }
        }
    }

    fn scan_directive(&mut self) -> Result<Token> {
        let start = self.mark();
        self.forward(1);
        let name = self.scan_directive_name(start)?;
        let value = match name.as_str() {
            "YAML" => self.scan_yaml_directive_value(start)?,
            "TAG" => self.scan_tag_directive_value(start)?,
            _ => Directive::Other,
        };
        let end = self.mark();
        if value == Directive::Other {
            while !break_or_end(self.peek(0)) {
                self.forward(1);
            }
        }
        self.scan_directive_ignored_line(start)?;
        Ok(Token {
            tok: Tok::Directive(name, value),
            start,
            end,
        })
    }

    fn directive_error(&self, start: Mark, problem: String) -> YamlError {
        error(
            Some(("while scanning a directive", start)),
            problem,
            self.mark(),
        )
    }

    fn scan_directive_name(&mut self, start: Mark) -> Result<String> {
        let mut length = 0;
        while word_char(self.peek(length)) {
            length += 1;
        }
        let expected = |s: &Self, ch: char| {
            s.directive_error(
                start,
                format!(
                    "expected alphabetic or numeric character, but found {}",
                    py_repr(ch)
                ),
            )
        };
        if length == 0 {
            return Err(expected(self, self.peek(length)));
        }
        let value = self.prefix(length);
        self.forward(length);
        let ch = self.peek(0);
        if !space_break_or_end(ch) {
            return Err(expected(self, ch));
        }
        Ok(value)
    }

    fn scan_yaml_directive_value(&mut self, start: Mark) -> Result<Directive> {
        while self.peek(0) == ' ' {
            self.forward(1);
        }
        let major = self.scan_yaml_directive_number(start)?;
        if self.peek(0) != '.' {
            return Err(self.directive_error(
                start,
                format!(
                    "expected a digit or '.', but found {}",
                    py_repr(self.peek(0))
                ),
            ));
        }
        self.forward(1);
        let minor = self.scan_yaml_directive_number(start)?;
        if !space_break_or_end(self.peek(0)) {
            return Err(self.directive_error(
                start,
                format!(
                    "expected a digit or ' ', but found {}",
                    py_repr(self.peek(0))
                ),
            ));
        }
        Ok(Directive::Yaml(major, minor))
    }

    fn scan_yaml_directive_number(&mut self, start: Mark) -> Result<u64> {
        let ch = self.peek(0);
        if !ch.is_ascii_digit() {
            return Err(self.directive_error(
                start,
                format!("expected a digit, but found {}", py_repr(ch)),
            ));
        }
        let mut length = 0;
        while self.peek(length).is_ascii_digit() {
            length += 1;
        }
        let digits = self.prefix(length);
        self.forward(length);
        // Python's int() has no upper bound; any version but 1 is refused by the parser anyway.
        Ok(digits.trim_start_matches('0').parse().unwrap_or(u64::MAX))
    }

    fn scan_tag_directive_value(&mut self, start: Mark) -> Result<Directive> {
        while self.peek(0) == ' ' {
            self.forward(1);
        }
        let handle = self.scan_tag_handle("directive", start)?;
        if self.peek(0) != ' ' {
            return Err(self.directive_error(
                start,
                format!("expected ' ', but found {}", py_repr(self.peek(0))),
            ));
        }
        while self.peek(0) == ' ' {
            self.forward(1);
        }
        let prefix = self.scan_tag_uri("directive", start)?;
        if !space_break_or_end(self.peek(0)) {
            return Err(self.directive_error(
                start,
                format!("expected ' ', but found {}", py_repr(self.peek(0))),
            ));
        }
        Ok(Directive::Tag(handle, prefix))
    }

    /// Skips the spaces and a comment that may end a line (the start of PyYAML's
    /// scan_directive_ignored_line and scan_block_scalar_ignored_line); the character after them.
    fn skip_spaces_and_comment(&mut self) -> char {
        while self.peek(0) == ' ' {
            self.forward(1);
        }
        if self.peek(0) == '#' {
            while !break_or_end(self.peek(0)) {
                self.forward(1);
            }
        }
        self.peek(0)
    }

    fn scan_directive_ignored_line(&mut self, start: Mark) -> Result<()> {
        let ch = self.skip_spaces_and_comment();
        if !break_or_end(ch) {
            return Err(self.directive_error(
                start,
                format!(
                    "expected a comment or a line break, but found {}",
                    py_repr(ch)
                ),
            ));
        }
        self.scan_line_break();
        Ok(())
    }

    fn scan_anchor(&mut self, alias: bool) -> Result<Token> {
        let start = self.mark();
        let context = if alias {
            "while scanning an alias"
        } else {
            "while scanning an anchor"
        };
        self.forward(1);
        let mut length = 0;
        while word_char(self.peek(length)) {
            length += 1;
        }
        let expected = |s: &Self, ch: char| {
            error(
                Some((context, start)),
                format!(
                    "expected alphabetic or numeric character, but found {}",
                    py_repr(ch)
                ),
                s.mark(),
            )
        };
        if length == 0 {
            return Err(expected(self, self.peek(0)));
        }
        let value = self.prefix(length);
        self.forward(length);
        let ch = self.peek(0);
        if !(blank_or_end(ch) || "?:,]}%@`".contains(ch)) {
            return Err(expected(self, ch));
        }
        let tok = if alias {
            Tok::Alias(value)
        } else {
            Tok::Anchor(value)
        };
        Ok(Token {
            tok,
            start,
            end: self.mark(),
        })
    }

    fn scan_tag(&mut self) -> Result<Token> {
        let start = self.mark();
        let ch = self.peek(1);
        let (handle, suffix);
        if ch == '<' {
            handle = None;
            self.forward(2);
            suffix = self.scan_tag_uri("tag", start)?;
            if self.peek(0) != '>' {
                return Err(error(
                    Some(("while parsing a tag", start)),
                    format!("expected '>', but found {}", py_repr(self.peek(0))),
                    self.mark(),
                ));
            }
            self.forward(1);
        } else if blank_or_end(ch) {
            handle = None;
            suffix = "!".to_owned();
            self.forward(1);
        } else {
            let mut length = 1;
            let mut use_handle = false;
            let mut c = ch;
            while !space_break_or_end(c) {
                if c == '!' {
                    use_handle = true;
                    break;
                }
                length += 1;
                c = self.peek(length);
            }
            if use_handle {
                handle = Some(self.scan_tag_handle("tag", start)?);
            } else {
                handle = Some("!".to_owned());
                self.forward(1);
            }
            suffix = self.scan_tag_uri("tag", start)?;
        }
        let ch = self.peek(0);
        if !space_break_or_end(ch) {
            return Err(error(
                Some(("while scanning a tag", start)),
                format!("expected ' ', but found {}", py_repr(ch)),
                self.mark(),
            ));
        }
        Ok(Token {
            tok: Tok::Tag(handle, suffix),
            start,
            end: self.mark(),
        })
    }

    fn scan_block_scalar(&mut self, style: char) -> Result<Token> {
        let folded = style == '>';
        let mut chunks = String::new();
        let start = self.mark();
        self.forward(1);
        let (chomping, increment) = self.scan_block_scalar_indicators(start)?;
        self.scan_block_scalar_ignored_line(start)?;

        let min_indent = (self.indent + 1).max(1) as usize;
        let (mut breaks, mut end, indent) = match increment {
            None => {
                let (breaks, max_indent, end) = self.scan_block_scalar_indentation();
                (breaks, end, min_indent.max(max_indent))
            }
            Some(inc) => {
                let indent = min_indent + inc - 1;
                let (breaks, end) = self.scan_block_scalar_breaks(indent);
                (breaks, end, indent)
            }
        };
        let mut line_break = String::new();

        while self.column == indent && self.peek(0) != '\0' {
            chunks.extend(breaks.drain(..));
            let leading_non_space = !matches!(self.peek(0), ' ' | '\t');
            let mut length = 0;
            while !break_or_end(self.peek(length)) {
                length += 1;
            }
            self.take(length, &mut chunks);
            line_break = self.scan_line_break();
            (breaks, end) = self.scan_block_scalar_breaks(indent);
            if self.column == indent && self.peek(0) != '\0' {
                if folded
                    && line_break == "\n"
                    && leading_non_space
                    && !matches!(self.peek(0), ' ' | '\t')
                {
                    if breaks.is_empty() {
                        chunks.push(' ');
                    }
                } else {
                    chunks.push_str(&line_break);
                }
            } else {
                break;
            }
        }

        if chomping != Some(false) {
            chunks.push_str(&line_break);
        }
        if chomping == Some(true) {
            chunks.extend(breaks.drain(..));
        }
        Ok(Token {
            tok: Tok::Scalar(chunks, false, Some(style)),
            start,
            end,
        })
    }

    fn scan_block_scalar_indicators(
        &mut self,
        start: Mark,
    ) -> Result<(Option<bool>, Option<usize>)> {
        let context = Some(("while scanning a block scalar", start));
        let zero = |s: &Self| {
            error(
                context,
                "expected indentation indicator in the range 1-9, but found 0",
                s.mark(),
            )
        };
        let mut chomping = None;
        let mut increment = None;
        let ch = self.peek(0);
        if ch == '+' || ch == '-' {
            chomping = Some(ch == '+');
            self.forward(1);
            let ch = self.peek(0);
            if let Some(d) = ch.to_digit(10) {
                if d == 0 {
                    return Err(zero(self));
                }
                increment = Some(d as usize);
                self.forward(1);
            }
        } else if let Some(d) = ch.to_digit(10) {
            if d == 0 {
                return Err(zero(self));
            }
            increment = Some(d as usize);
            self.forward(1);
            let ch = self.peek(0);
            if ch == '+' || ch == '-' {
                chomping = Some(ch == '+');
                self.forward(1);
            }
        }
        let ch = self.peek(0);
        if !space_break_or_end(ch) {
            return Err(error(
                context,
                format!(
                    "expected chomping or indentation indicators, but found {}",
                    py_repr(ch)
                ),
                self.mark(),
            ));
        }
        Ok((chomping, increment))
    }

    fn scan_block_scalar_ignored_line(&mut self, start: Mark) -> Result<()> {
        let ch = self.skip_spaces_and_comment();
        if !break_or_end(ch) {
            return Err(error(
                Some(("while scanning a block scalar", start)),
                format!(
                    "expected a comment or a line break, but found {}",
                    py_repr(ch)
                ),
                self.mark(),
            ));
        }
        self.scan_line_break();
        Ok(())
    }

    fn scan_block_scalar_indentation(&mut self) -> (Vec<String>, usize, Mark) {
        let mut chunks = Vec::new();
        let mut max_indent = 0;
        let mut end = self.mark();
        while self.peek(0) == ' ' || line_break(self.peek(0)) {
            if self.peek(0) != ' ' {
                chunks.push(self.scan_line_break());
                end = self.mark();
            } else {
                self.forward(1);
                max_indent = max_indent.max(self.column);
            }
        }
        (chunks, max_indent, end)
    }

    fn scan_block_scalar_breaks(&mut self, indent: usize) -> (Vec<String>, Mark) {
        let mut chunks = Vec::new();
        let mut end = self.mark();
        while self.column < indent && self.peek(0) == ' ' {
            self.forward(1);
        }
        while line_break(self.peek(0)) {
            chunks.push(self.scan_line_break());
            end = self.mark();
            while self.column < indent && self.peek(0) == ' ' {
                self.forward(1);
            }
        }
        (chunks, end)
    }

    fn scan_flow_scalar(&mut self, style: char) -> Result<Token> {
        let double = style == '"';
        let mut chunks = String::new();
        let start = self.mark();
        let quote = self.peek(0);
        self.forward(1);
        self.scan_flow_scalar_non_spaces(double, start, &mut chunks)?;
        while self.peek(0) != quote {
            self.scan_flow_scalar_spaces(start, &mut chunks)?;
            self.scan_flow_scalar_non_spaces(double, start, &mut chunks)?;
        }
        self.forward(1);
        Ok(Token {
            tok: Tok::Scalar(chunks, false, Some(style)),
            start,
            end: self.mark(),
        })
    }

    fn scan_flow_scalar_non_spaces(
        &mut self,
        double: bool,
        start: Mark,
        chunks: &mut String,
    ) -> Result<()> {
        let context = Some(("while scanning a double-quoted scalar", start));
        loop {
            let mut length = 0;
            while !(blank_or_end(self.peek(length))
                || matches!(self.peek(length), '\'' | '"' | '\\'))
            {
                length += 1;
            }
            self.take(length, chunks);
            let ch = self.peek(0);
            if !double && ch == '\'' && self.peek(1) == '\'' {
                chunks.push('\'');
                self.forward(2);
            } else if (double && ch == '\'') || (!double && (ch == '"' || ch == '\\')) {
                chunks.push(ch);
                self.forward(1);
            } else if double && ch == '\\' {
                self.forward(1);
                let ch = self.peek(0);
                if let Some(replacement) = escape_replacement(ch) {
                    chunks.push(replacement);
                    self.forward(1);
                } else if let Some(length) = escape_code_length(ch) {
                    self.forward(1);
                    for k in 0..length {
                        if !self.peek(k).is_ascii_hexdigit() {
                            return Err(error(
                                context,
                                format!(
                                    "expected escape sequence of {length} hexadecimal numbers, but found {}",
                                    py_repr(self.peek(k))
                                ),
                                self.mark(),
                            ));
                        }
                    }
                    let code = u32::from_str_radix(&self.prefix(length), 16).unwrap_or(u32::MAX);
                    match char::from_u32(code) {
                        Some(c) => chunks.push(c),
                        None if (0xD800..0xE000).contains(&code) => {
                            return Err(error(
                                context,
                                format!(
                                    "\\{ch}{} is a lone UTF-16 surrogate: PyYAML reads it into a string that cannot be written as UTF-8, and {} cannot copy it into a {}; write the character itself, or as one \\U{{8 hex digits}} escape",
                                    self.prefix(length),
                                    self.words.program,
                                    self.words.output,
                                ),
                                self.mark(),
                            ))
                        }
                        None => {
                            return Err(error(
                                context,
                                format!(
                                    "\\{ch}{} is beyond the last Unicode code point (Python's chr() raises ValueError)",
                                    self.prefix(length)
                                ),
                                self.mark(),
                            ))
                        }
                    }
                    self.forward(length);
                } else if line_break(ch) {
                    self.scan_line_break();
                    self.scan_flow_scalar_breaks(start, chunks)?;
                } else {
                    return Err(error(
                        context,
                        format!("found unknown escape character {}", py_repr(ch)),
                        self.mark(),
                    ));
                }
            } else {
                return Ok(());
            }
        }
    }

    fn scan_flow_scalar_spaces(&mut self, start: Mark, chunks: &mut String) -> Result<()> {
        let mut length = 0;
        while matches!(self.peek(length), ' ' | '\t') {
            length += 1;
        }
        let whitespaces = self.prefix(length);
        self.forward(length);
        let ch = self.peek(0);
        if ch == '\0' {
            return Err(error(
                Some(("while scanning a quoted scalar", start)),
                "found unexpected end of stream",
                self.mark(),
            ));
        } else if line_break(ch) {
            let line_break = self.scan_line_break();
            let mut breaks = String::new();
            self.scan_flow_scalar_breaks(start, &mut breaks)?;
            if line_break != "\n" {
                chunks.push_str(&line_break);
            } else if breaks.is_empty() {
                chunks.push(' ');
            }
            chunks.push_str(&breaks);
        } else {
            chunks.push_str(&whitespaces);
        }
        Ok(())
    }

    fn scan_flow_scalar_breaks(&mut self, start: Mark, chunks: &mut String) -> Result<()> {
        loop {
            if self.at_separator() {
                return Err(error(
                    Some(("while scanning a quoted scalar", start)),
                    "found unexpected document separator",
                    self.mark(),
                ));
            }
            while matches!(self.peek(0), ' ' | '\t') {
                self.forward(1);
            }
            if line_break(self.peek(0)) {
                chunks.push_str(&self.scan_line_break());
            } else {
                return Ok(());
            }
        }
    }

    fn scan_plain(&mut self) -> Token {
        let mut chunks = String::new();
        let start = self.mark();
        let mut end = start;
        let indent = self.indent + 1;
        let mut spaces = String::new();
        loop {
            let mut length = 0;
            if self.peek(0) == '#' {
                break;
            }
            loop {
                let ch = self.peek(length);
                let next = self.peek(length + 1);
                if blank_or_end(ch)
                    || (ch == ':'
                        && (blank_or_end(next) || (self.flow_level != 0 && ",[]{}".contains(next))))
                    || (self.flow_level != 0 && ",?[]{}".contains(ch))
                {
                    break;
                }
                length += 1;
            }
            if length == 0 {
                break;
            }
            self.allow_simple_key = false;
            chunks.push_str(&spaces);
            self.take(length, &mut chunks);
            end = self.mark();
            spaces = self.scan_plain_spaces();
            if spaces.is_empty()
                || self.peek(0) == '#'
                || (self.flow_level == 0 && self.col() < indent)
            {
                break;
            }
        }
        Token {
            tok: Tok::Scalar(chunks, true, None),
            start,
            end,
        }
    }

    /// The spaces and line breaks after a plain scalar's chunk, folded; empty where PyYAML's
    /// returns nothing (no spaces, or a document separator after a line break).
    fn scan_plain_spaces(&mut self) -> String {
        let mut chunks = String::new();
        let mut length = 0;
        while self.peek(length) == ' ' {
            length += 1;
        }
        let whitespaces = self.prefix(length);
        self.forward(length);
        let ch = self.peek(0);
        if line_break(ch) {
            let first_break = self.scan_line_break();
            self.allow_simple_key = true;
            if self.at_separator() {
                return String::new();
            }
            let mut breaks = String::new();
            while self.peek(0) == ' ' || line_break(self.peek(0)) {
                if self.peek(0) == ' ' {
                    self.forward(1);
                } else {
                    breaks.push_str(&self.scan_line_break());
                    if self.at_separator() {
                        return String::new();
                    }
                }
            }
            if first_break != "\n" {
                chunks.push_str(&first_break);
            } else if breaks.is_empty() {
                chunks.push(' ');
            }
            chunks.push_str(&breaks);
        } else if !whitespaces.is_empty() {
            chunks.push_str(&whitespaces);
        }
        chunks
    }

    fn scan_tag_handle(&mut self, name: &str, start: Mark) -> Result<String> {
        let context = format!("while scanning a {name}");
        let ch = self.peek(0);
        if ch != '!' {
            return Err(error(
                Some((&context, start)),
                format!("expected '!', but found {}", py_repr(ch)),
                self.mark(),
            ));
        }
        let mut length = 1;
        let mut ch = self.peek(length);
        if ch != ' ' {
            while word_char(ch) {
                length += 1;
                ch = self.peek(length);
            }
            if ch != '!' {
                self.forward(length);
                return Err(error(
                    Some((&context, start)),
                    format!("expected '!', but found {}", py_repr(ch)),
                    self.mark(),
                ));
            }
            length += 1;
        }
        let value = self.prefix(length);
        self.forward(length);
        Ok(value)
    }

    fn scan_tag_uri(&mut self, name: &str, start: Mark) -> Result<String> {
        let mut chunks = String::new();
        let mut length = 0;
        let mut ch = self.peek(length);
        while ch.is_ascii_alphanumeric() || "-;/?:@&=+$,_.!~*'()[]%".contains(ch) {
            if ch == '%' {
                chunks.push_str(&self.prefix(length));
                self.forward(length);
                length = 0;
                chunks.push_str(&self.scan_uri_escapes(name, start)?);
            } else {
                length += 1;
            }
            ch = self.peek(length);
        }
        if length > 0 {
            self.take(length, &mut chunks);
        }
        if chunks.is_empty() {
            return Err(error(
                Some((&format!("while parsing a {name}"), start)),
                format!("expected URI, but found {}", py_repr(ch)),
                self.mark(),
            ));
        }
        Ok(chunks)
    }

    fn scan_uri_escapes(&mut self, name: &str, start: Mark) -> Result<String> {
        let context = format!("while scanning a {name}");
        let mut codes = Vec::new();
        let mark = self.mark();
        while self.peek(0) == '%' {
            self.forward(1);
            for k in 0..2 {
                if !self.peek(k).is_ascii_hexdigit() {
                    return Err(error(
                        Some((&context, start)),
                        format!(
                            "expected URI escape sequence of 2 hexadecimal numbers, but found {}",
                            py_repr(self.peek(k))
                        ),
                        self.mark(),
                    ));
                }
            }
            codes.push(u8::from_str_radix(&self.prefix(2), 16).unwrap_or(0));
            self.forward(2);
        }
        String::from_utf8(codes).map_err(|e| {
            error(
                Some((&context, start)),
                format!("'utf-8' codec can't decode the escaped bytes: {e}"),
                mark,
            )
        })
    }

    fn scan_line_break(&mut self) -> String {
        let ch = self.peek(0);
        match ch {
            '\r' | '\n' | '\u{85}' => {
                if self.looking_at("\r\n") {
                    self.forward(2);
                } else {
                    self.forward(1);
                }
                "\n".to_owned()
            }
            '\u{2028}' | '\u{2029}' => {
                self.forward(1);
                ch.to_string()
            }
            _ => String::new(),
        }
    }
}

/// `Scanner.ESCAPE_REPLACEMENTS`.
fn escape_replacement(c: char) -> Option<char> {
    Some(match c {
        '0' => '\0',
        'a' => '\x07',
        'b' => '\x08',
        't' | '\t' => '\t',
        'n' => '\n',
        'v' => '\x0b',
        'f' => '\x0c',
        'r' => '\r',
        'e' => '\x1b',
        ' ' => ' ',
        '"' => '"',
        '\\' => '\\',
        '/' => '/',
        'N' => '\u{85}',
        '_' => '\u{a0}',
        'L' => '\u{2028}',
        'P' => '\u{2029}',
        _ => return None,
    })
}

/// `Scanner.ESCAPE_CODES`.
fn escape_code_length(c: char) -> Option<usize> {
    match c {
        'x' => Some(2),
        'u' => Some(4),
        'U' => Some(8),
        _ => None,
    }
}

/// A character as Python's `%r` shows it in PyYAML's messages (`'\t'`, `'?'`, `'\x00'`).
pub fn py_repr(c: char) -> String {
    match c {
        '\t' => "'\\t'".to_owned(),
        '\n' => "'\\n'".to_owned(),
        '\r' => "'\\r'".to_owned(),
        '\'' => "\"'\"".to_owned(),
        '\\' => "'\\\\'".to_owned(),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => format!("'\\x{:02x}'", c as u32),
        c if (0x80..0xa0).contains(&(c as u32)) => format!("'\\x{:02x}'", c as u32),
        c => format!("'{c}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Tok> {
        let mut s = Scanner::new(text, crate::tests::WORDS);
        let mut out = Vec::new();
        while let Some(t) = s.get_token().expect("scans") {
            out.push(t.tok);
        }
        out
    }

    #[test]
    fn a_simple_key_gets_its_key_token_and_block_mapping_start_back_in_the_queue() {
        let toks = kinds("a: [1, 2]#c\n");
        assert_eq!(
            toks,
            vec![
                Tok::StreamStart,
                Tok::BlockMappingStart,
                Tok::Key,
                Tok::Scalar("a".into(), true, None),
                Tok::Value,
                Tok::FlowSequenceStart,
                Tok::Scalar("1".into(), true, None),
                Tok::FlowEntry,
                Tok::Scalar("2".into(), true, None),
                Tok::FlowSequenceEnd,
                Tok::BlockEnd,
                Tok::StreamEnd,
            ]
        );
    }

    #[test]
    fn a_tab_between_tokens_is_pyyamls_error() {
        let mut s = Scanner::new("- [1, 2]\t\n", crate::tests::WORDS);
        let err = loop {
            match s.get_token() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("scanned a tab PyYAML refuses"),
                Err(e) => break e,
            }
        };
        assert_eq!(
            err.problem,
            "found character '\\t' that cannot start any token"
        );
        assert_eq!((err.mark.line, err.mark.column), (0, 8));
    }

    #[test]
    fn quoted_scalars_fold_like_pyyaml() {
        let toks = kinds("\"ab\n  cd\\\n  ef\\x41\\u00e9\"");
        assert!(
            toks.contains(&Tok::Scalar("ab cdefAé".into(), false, Some('"'))),
            "{toks:?}"
        );
    }
}
