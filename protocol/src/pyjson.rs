//! Python's `json` module, in Rust: `json.loads` (strict), `json.dumps(v, indent=2,
//! ensure_ascii=False)` and Python's `==` on what `json.loads` returns.
//!
//! Record files are written by Python's `json` with its defaults, and the harness compares and
//! rewrites them with Python's semantics. serde_json cannot stand in for that: it rejects `NaN`
//! and `Infinity` (which Python writes by default), prints floats in another style (`1e16` vs
//! Python's `1e+16`, `1e-5` vs `1e-05`), loses integers beyond 64 bits, and has no notion of
//! Python's equality (`1 == 1.0 == True`, big ints against floats compared exactly, a NaN equal
//! to itself inside a list or dict but not alone). So this module parses and writes the few
//! things JSON holds exactly as Python does.

use crate::fxhash::FxHashMap;
use std::fmt;
use std::fmt::Write as _;

/// Deeper nesting than this is an error rather than a stack overflow (Python raises
/// `RecursionError` at about the same depth).
pub const MAX_DEPTH: usize = 1000;

/// Python's default cap on the digits of an `int` read from text (`sys.get_int_max_str_digits`).
pub const MAX_INT_DIGITS: usize = 4300;

/// A value as `json.loads` returns it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// An integer of any size, as canonical decimal text (no leading zeros, no `-0`).
    Int(String),
    Float(f64),
    Str(String),
    Array(Vec<Value>),
    /// A dict: keys unique, in insertion order; a repeated key's last value sits at the
    /// position of its first occurrence, as in a Python dict.
    Object(Vec<(String, Value)>),
}

impl Value {
    /// What kind of JSON value this is, for messages (`an array`, `a string`).
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// A parse error, positioned like Python's `JSONDecodeError` (1-based line and column, in
/// characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for Error {
    /// `LINE:COL: message`, so that a caller can prefix the file name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for Error {}

/// Parses `text` as `json.loads(text)` would, strictly.
pub fn loads(text: &str) -> Result<Value, Error> {
    parse_document(text, Parser::value)
}

/// Where a piece of `dumps` text lies in the buffer that [`loads_outline`] appends to.
pub type Span = std::ops::Range<usize>;

/// A document as [`loads_outline`] returns it: its objects down to a chosen depth, and every
/// value at that depth only as its `dumps` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outline {
    /// An object above the depth: each key's `dumps` text (quotes included) and its value, a
    /// repeated key's last value at its first position, as in a Python dict.
    Object(Vec<(Span, Outline)>),
    /// A value at the depth: what `json.dumps(indent=2, ensure_ascii=False)` writes for it
    /// there, indented for that depth.
    Text(Span),
    /// A value above the depth that is not an object: only its kind, as [`Value::kind`] says.
    Other(&'static str),
}

/// `json.loads(text)` (accepting and rejecting exactly what [`loads`] does, with the same
/// errors) kept as an [`Outline`] whose texts are appended to `out`.
///
/// A merge needs a record file's configs only to compare and rewrite them; as text they cost
/// one copy each, where a [`Value`] tree costs a dozen allocations to build and to free.
pub fn loads_outline(text: &str, depth: usize, out: &mut String) -> Result<Outline, Error> {
    parse_document(text, |p| p.outline(0, depth, out))
}

fn parse_document<'a, T>(
    text: &'a str,
    parse: impl FnOnce(&mut Parser<'a>) -> Result<T, Fail>,
) -> Result<T, Error> {
    Parser::new(text).document(parse).map_err(|(pos, message)| {
        let before = &text[..pos];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Error {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
            message,
        }
    })
}

/// A failure at a byte offset; turned into line and column once, at the end.
type Fail = (usize, String);

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            depth: 0,
        }
    }

    /// The string (quotes and escapes as written) or scalar at `pos`, for [`text_eq`].
    fn token(&mut self) -> Option<&'a str> {
        let b = self.bytes;
        let start = self.pos;
        let mut i = start;
        if b.get(i) == Some(&b'"') {
            i += 1;
            loop {
                match *b.get(i)? {
                    b'"' => break,
                    b'\\' => i += 2,
                    _ => i += 1,
                }
            }
            i += 1;
        } else {
            while i < b.len() && !b" \t\r\n,:]}".contains(&b[i]) {
                i += 1;
            }
        }
        self.pos = i;
        Some(&self.text[start..i])
    }

    fn document<T>(&mut self, parse: impl FnOnce(&mut Self) -> Result<T, Fail>) -> Result<T, Fail> {
        if self.text.starts_with('\u{feff}') {
            return Err((0, "unexpected UTF-8 BOM (decode using utf-8-sig)".into()));
        }
        self.skip_ws();
        let value = parse(self)?;
        self.skip_ws();
        if self.pos != self.bytes.len() {
            return Err((self.pos, "extra data after the JSON value".into()));
        }
        Ok(value)
    }

    /// The value at `pos`, at nesting `level`, as an [`Outline`] down to `depth`.
    fn outline(&mut self, level: usize, depth: usize, out: &mut String) -> Result<Outline, Fail> {
        if level == depth {
            let start = out.len();
            self.value_text(out, level)?;
            return Ok(Outline::Text(start..out.len()));
        }
        if self.bytes.get(self.pos) != Some(&b'{') {
            return Ok(Outline::Other(self.value()?.kind()));
        }
        if self.depth >= MAX_DEPTH {
            return Err((self.pos, format!("nested deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        self.pos += 1;
        self.skip_ws();
        let mut entries = Vec::new();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
        } else {
            loop {
                if self.bytes.get(self.pos) != Some(&b'"') {
                    return Err((
                        self.pos,
                        "expecting property name enclosed in double quotes".into(),
                    ));
                }
                let start = out.len();
                match self.plain_string() {
                    Some(key) => out.push_str(key),
                    None => write_str(out, &self.string()?),
                }
                let key = start..out.len();
                self.skip_ws();
                if self.bytes.get(self.pos) != Some(&b':') {
                    return Err((self.pos, "expecting ':' delimiter".into()));
                }
                self.pos += 1;
                self.skip_ws();
                entries.push((key, self.outline(level + 1, depth, out)?));
                self.skip_ws();
                match self.bytes.get(self.pos) {
                    Some(b'}') => {
                        self.pos += 1;
                        break;
                    }
                    Some(b',') => {
                        self.pos += 1;
                        self.skip_ws();
                    }
                    _ => return Err((self.pos, "expecting ',' delimiter".into())),
                }
            }
        }
        self.depth -= 1;
        // `dumps` writes a string one way only, so equal keys have equal texts.
        let found = repeats(entries.len(), entries.iter().map(|(k, _)| &out[k.clone()]));
        drop_repeats(&mut entries, found);
        Ok(Outline::Object(entries))
    }

    /// Appends the `dumps` text, at indent `level`, of the value at `pos`.
    fn value_text(&mut self, out: &mut String, level: usize) -> Result<(), Fail> {
        let (pos, depth, len) = (self.pos, self.depth, out.len());
        if self.copy_text(out, level).is_some() {
            return Ok(());
        }
        // What the fast path leaves (escapes, repeated keys, big objects, errors) goes through
        // the tree, which also reports an error where Python would.
        (self.pos, self.depth) = (pos, depth);
        out.truncate(len);
        let value = self.value()?;
        write_value(out, &value, level);
        Ok(())
    }

    /// [`Self::value_text`] without a tree: text that is already what `dumps` writes (strings
    /// without escapes, ints, words) is copied, floats are rewritten in repr's form. `None`
    /// where that does not suffice.
    fn copy_text(&mut self, out: &mut String, level: usize) -> Option<()> {
        match *self.bytes.get(self.pos)? {
            b'"' => out.push_str(self.plain_string()?),
            b'{' => self.object_text(out, level)?,
            b'[' => self.array_text(out, level)?,
            b'n' => self.copy_word("null", out)?,
            b't' => self.copy_word("true", out)?,
            b'f' => self.copy_word("false", out)?,
            b'N' => self.copy_word("NaN", out)?,
            b'I' => self.copy_word("Infinity", out)?,
            b'-' if self.rest_starts_with("-Infinity") => self.copy_word("-Infinity", out)?,
            b'-' | b'0'..=b'9' => {
                let start = self.pos;
                let (text, is_int) = self.scan_number().ok()?;
                if is_int {
                    out.push_str(canonical_int(text, start).ok()?);
                } else {
                    write_float(out, text.parse().ok()?);
                }
            }
            _ => return None,
        }
        Some(())
    }

    fn copy_word(&mut self, word: &str, out: &mut String) -> Option<()> {
        self.rest_starts_with(word).then(|| {
            self.pos += word.len();
            out.push_str(word);
        })
    }

    /// The string at `pos`, quotes included, when it holds no escape (so `dumps` writes it
    /// back unchanged); `None`, not moving, otherwise.
    fn plain_string(&mut self) -> Option<&'a str> {
        let b = self.bytes;
        if b.get(self.pos) != Some(&b'"') {
            return None;
        }
        let mut i = self.pos + 1;
        while i < b.len() && b[i] != b'"' && b[i] != b'\\' && b[i] >= 0x20 {
            i += 1;
        }
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let text = &self.text[self.pos..=i];
        self.pos = i + 1;
        Some(text)
    }

    fn enter(&mut self) -> Option<()> {
        (self.depth < MAX_DEPTH).then(|| self.depth += 1)
    }

    fn object_text(&mut self, out: &mut String, level: usize) -> Option<()> {
        self.enter()?;
        self.pos += 1;
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            out.push_str("{}");
            self.depth -= 1;
            return Some(());
        }
        // Configs hold a few keys; a bigger object is left to the tree and its hashed dedup.
        let mut keys = [""; 16];
        let mut n = 0;
        out.push('{');
        loop {
            newline_indent(out, level + 1);
            let key = self.plain_string()?;
            if n == keys.len() || keys[..n].contains(&key) {
                return None;
            }
            keys[n] = key;
            n += 1;
            out.push_str(key);
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b':') {
                return None;
            }
            self.pos += 1;
            self.skip_ws();
            out.push_str(": ");
            self.copy_text(out, level + 1)?;
            self.skip_ws();
            match self.bytes.get(self.pos)? {
                b'}' => break,
                b',' => {
                    self.pos += 1;
                    self.skip_ws();
                    out.push(',');
                }
                _ => return None,
            }
        }
        self.pos += 1;
        newline_indent(out, level);
        out.push('}');
        self.depth -= 1;
        Some(())
    }

    fn array_text(&mut self, out: &mut String, level: usize) -> Option<()> {
        self.enter()?;
        self.pos += 1;
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
            out.push_str("[]");
            self.depth -= 1;
            return Some(());
        }
        out.push('[');
        loop {
            newline_indent(out, level + 1);
            self.copy_text(out, level + 1)?;
            self.skip_ws();
            match self.bytes.get(self.pos)? {
                b']' => break,
                b',' => {
                    self.pos += 1;
                    self.skip_ws();
                    out.push(',');
                }
                _ => return None,
            }
        }
        self.pos += 1;
        newline_indent(out, level);
        out.push(']');
        self.depth -= 1;
        Some(())
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn rest_starts_with(&self, word: &str) -> bool {
        self.bytes[self.pos..].starts_with(word.as_bytes())
    }

    fn word(&mut self, word: &str, value: Value) -> Result<Value, Fail> {
        if self.rest_starts_with(word) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.expecting_value())
        }
    }

    fn expecting_value(&self) -> Fail {
        (self.pos, "expecting value".into())
    }

    fn value(&mut self) -> Result<Value, Fail> {
        match self.bytes.get(self.pos) {
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(b'n') => self.word("null", Value::Null),
            Some(b't') => self.word("true", Value::Bool(true)),
            Some(b'f') => self.word("false", Value::Bool(false)),
            Some(b'N') => self.word("NaN", Value::Float(f64::NAN)),
            Some(b'I') => self.word("Infinity", Value::Float(f64::INFINITY)),
            Some(b'-') if self.rest_starts_with("-Infinity") => {
                self.word("-Infinity", Value::Float(f64::NEG_INFINITY))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.expecting_value()),
        }
    }

    fn nested(&mut self, parse: fn(&mut Self) -> Result<Value, Fail>) -> Result<Value, Fail> {
        if self.depth >= MAX_DEPTH {
            return Err((self.pos, format!("nested deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        let value = parse(self);
        self.depth -= 1;
        value
    }

    /// Numbers as Python's scanner matches them: `-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?`, an
    /// int without fraction or exponent, else a float (overflowing to infinity).
    fn number(&mut self) -> Result<Value, Fail> {
        let start = self.pos;
        let (text, is_int) = self.scan_number()?;
        if is_int {
            return Ok(Value::Int(canonical_int(text, start)?.to_owned()));
        }
        text.parse::<f64>()
            .map(Value::Float)
            .map_err(|e| (start, format!("bad number {text:?}: {e}")))
    }

    /// Moves past the number at `pos`: its text, and whether it is an int.
    fn scan_number(&mut self) -> Result<(&str, bool), Fail> {
        let start = self.pos;
        let b = self.bytes;
        let digits = |mut i: usize| {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            i
        };
        let mut i = start;
        if b[i] == b'-' {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(i),
            _ => return Err(self.expecting_value()),
        }
        let int_end = i;
        if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i = digits(i + 1);
        }
        if let Some(b'e' | b'E') = b.get(i) {
            let mut j = i + 1;
            if let Some(b'+' | b'-') = b.get(j) {
                j += 1;
            }
            if b.get(j).is_some_and(u8::is_ascii_digit) {
                i = digits(j);
            }
        }
        self.pos = i;
        Ok((&self.text[start..i], i == int_end))
    }

    fn string(&mut self) -> Result<String, Fail> {
        let quote = self.pos;
        let unterminated = || (quote, "unterminated string".to_owned());
        let b = self.bytes;
        let mut out = String::new();
        let mut i = quote + 1;
        loop {
            let run = i;
            while i < b.len() && b[i] != b'"' && b[i] != b'\\' && b[i] >= 0x20 {
                i += 1;
            }
            out.push_str(&self.text[run..i]);
            match b.get(i) {
                None => return Err(unterminated()),
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let esc = *b.get(i + 1).ok_or_else(unterminated)?;
                    let simple = match esc {
                        b'"' => Some('"'),
                        b'\\' => Some('\\'),
                        b'/' => Some('/'),
                        b'b' => Some('\u{8}'),
                        b'f' => Some('\u{c}'),
                        b'n' => Some('\n'),
                        b'r' => Some('\r'),
                        b't' => Some('\t'),
                        b'u' => None,
                        _ => return Err((i, "invalid \\escape".into())),
                    };
                    if let Some(c) = simple {
                        out.push(c);
                        i += 2;
                        continue;
                    }
                    let unit = self
                        .hex4(i + 2)
                        .ok_or((i, "invalid \\uXXXX escape".into()))?;
                    i += 6;
                    let code = match unit {
                        0xD800..=0xDBFF => {
                            let low = (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u'))
                                .then(|| self.hex4(i + 2))
                                .flatten()
                                .filter(|u| (0xDC00..=0xDFFF).contains(u));
                            match low {
                                Some(low) => {
                                    i += 6;
                                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                                }
                                None => return Err(lone_surrogate(i - 6, unit)),
                            }
                        }
                        0xDC00..=0xDFFF => return Err(lone_surrogate(i - 6, unit)),
                        _ => unit,
                    };
                    out.push(char::from_u32(code).ok_or((i, "invalid \\uXXXX escape".into()))?);
                }
                Some(_) => return Err((i, "invalid control character in string".into())),
            }
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.bytes.get(at..at + 4)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    }

    fn object(&mut self) -> Result<Value, Fail> {
        self.pos += 1;
        self.skip_ws();
        let mut entries = Vec::new();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Value::Object(entries));
        }
        loop {
            if self.bytes.get(self.pos) != Some(&b'"') {
                return Err((
                    self.pos,
                    "expecting property name enclosed in double quotes".into(),
                ));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b':') {
                return Err((self.pos, "expecting ':' delimiter".into()));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value()?;
            entries.push((key, value));
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(dedup(entries)));
                }
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                _ => return Err((self.pos, "expecting ',' delimiter".into())),
            }
        }
    }

    fn array(&mut self) -> Result<Value, Fail> {
        self.pos += 1;
        self.skip_ws();
        let mut items = Vec::new();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                _ => return Err((self.pos, "expecting ',' delimiter".into())),
            }
        }
    }
}

fn lone_surrogate(at: usize, unit: u32) -> Fail {
    (
        at,
        format!("lone surrogate \\u{unit:04x} cannot be written as UTF-8"),
    )
}

/// An int's text as Python prints the int: `-0` is `0`; too many digits is Python's error.
fn canonical_int(text: &str, start: usize) -> Result<&str, Fail> {
    let magnitude = text.trim_start_matches('-');
    if magnitude.len() > MAX_INT_DIGITS {
        return Err((
            start,
            format!(
                "integer with {} digits exceeds Python's {MAX_INT_DIGITS}-digit limit",
                magnitude.len()
            ),
        ));
    }
    Ok(if magnitude == "0" { "0" } else { text })
}

/// A repeated key keeps its first position and takes its last value, as a Python dict does.
fn dedup(mut entries: Vec<(String, Value)>) -> Vec<(String, Value)> {
    let found = repeats(entries.len(), entries.iter().map(|(k, _)| k.as_str()));
    drop_repeats(&mut entries, found);
    entries
}

/// (first index, later index) for every repeated name, in input order.
fn repeats<'a>(len: usize, names: impl Iterator<Item = &'a str> + Clone) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    if len <= 8 {
        for (i, name) in names.clone().enumerate().skip(1) {
            if let Some(j) = names.clone().take(i).position(|k| k == name) {
                found.push((j, i));
            }
        }
    } else {
        let mut first: FxHashMap<&str, usize> =
            FxHashMap::with_capacity_and_hasher(len, Default::default());
        for (i, name) in names.enumerate() {
            if let Some(&j) = first.get(name) {
                found.push((j, i));
            } else {
                first.insert(name, i);
            }
        }
    }
    found
}

/// Moves each repeat's value to its first position and removes the repeat.
fn drop_repeats<K, V>(entries: &mut Vec<(K, V)>, repeats: Vec<(usize, usize)>) {
    if repeats.is_empty() {
        return;
    }
    let mut dropped = vec![false; entries.len()];
    for (j, i) in repeats {
        // Repeats come in input order, so the last value is the one left at `j`.
        let (head, tail) = entries.split_at_mut(i);
        std::mem::swap(&mut head[j].1, &mut tail[0].1);
        dropped[i] = true;
    }
    let mut index = 0;
    entries.retain(|_| {
        index += 1;
        !dropped[index - 1]
    });
}

/// `json.dumps(value, indent=2, ensure_ascii=False) + "\n"`.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, 0);
    out.push('\n');
    out
}

fn newline_indent(out: &mut String, level: usize) {
    // Pushing slices of this, not spaces one by one: every line of the output starts so.
    const SPACES: &str = "                                ";
    out.push('\n');
    let mut width = 2 * level;
    while width > 0 {
        let n = width.min(SPACES.len());
        out.push_str(&SPACES[..n]);
        width -= n;
    }
}

fn write_value(out: &mut String, value: &Value, level: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(text) => out.push_str(text),
        Value::Float(f) => write_float(out, *f),
        Value::Str(s) => write_str(out, s),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                newline_indent(out, level + 1);
                write_value(out, item, level + 1);
            }
            newline_indent(out, level);
            out.push(']');
        }
        Value::Object(entries) if entries.is_empty() => out.push_str("{}"),
        Value::Object(entries) => {
            out.push('{');
            for (n, (key, item)) in entries.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                newline_indent(out, level + 1);
                write_str(out, key);
                out.push_str(": ");
                write_value(out, item, level + 1);
            }
            newline_indent(out, level);
            out.push('}');
        }
    }
}

/// A string as `json.dumps(..., ensure_ascii=False)` writes it: only `"`, `\`, and the
/// characters below U+0020 are escaped.
fn write_str(out: &mut String, s: &str) {
    out.push('"');
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(esc);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// A float as Python's `json` writes it: `repr(f)` (shortest digits that read back the same,
/// exponent form iff the decimal exponent is below -4 or at least 16), or `NaN`, `Infinity`,
/// `-Infinity`.
pub fn float_repr(f: f64) -> String {
    let mut out = String::new();
    write_float(&mut out, f);
    out
}

/// [`float_repr`] appended to `out`. Record files hold a float per config, so the common case
/// formats on the stack rather than through a few heap strings.
fn write_float(out: &mut String, f: f64) {
    if f.is_nan() {
        return out.push_str("NaN");
    }
    if f.is_infinite() {
        return out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
    }
    if f.is_sign_negative() {
        out.push('-');
    }
    let a = f.abs();
    if may_tie(a) {
        let (digits, exp) = shortest_digits(a);
        let (first, rest) = digits.split_at(1);
        return write_digits(out, first, rest, exp);
    }
    let mut sci = StackText::default();
    // `{:e}` of a finite f64 is at most 24 bytes (`1.2345678901234567e-308`).
    let _ = write!(sci, "{a:e}");
    let sci = sci.as_str();
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let (first, rest) = mantissa.split_at(1);
    write_digits(
        out,
        first,
        rest.trim_start_matches('.'),
        exp.parse().unwrap_or(0),
    );
}

/// Writes the digits `first` `rest` (first one at decimal exponent `exp`) in repr's layout.
fn write_digits(out: &mut String, first: &str, rest: &str, exp: i32) {
    let zeros = |out: &mut String, n: usize| out.extend(std::iter::repeat_n('0', n));
    if !(-4..16).contains(&exp) {
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    } else if exp < 0 {
        out.push_str("0.");
        zeros(out, exp.unsigned_abs() as usize - 1);
        out.push_str(first);
        out.push_str(rest);
    } else {
        let point = exp as usize;
        if rest.len() <= point {
            out.push_str(first);
            out.push_str(rest);
            zeros(out, point - rest.len());
            out.push_str(".0");
        } else {
            out.push_str(first);
            out.push_str(&rest[..point]);
            out.push('.');
            out.push_str(&rest[point..]);
        }
    }
}

/// A little formatted text in a stack buffer.
#[derive(Default)]
struct StackText {
    buf: [u8; 32],
    len: usize,
}

impl StackText {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}

impl fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The shortest digits that read back as `a` (finite, not negative) and the decimal exponent
/// of the first one. Rust's `{:e}` finds them; where two candidates of that length lie exactly
/// as far from `a`, Python's repr takes the one ending in an even digit, and so do we.
fn shortest_digits(a: f64) -> (String, i32) {
    let split = |sci: &str| -> (String, i32) {
        let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
        (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
    };
    let (digits, exp) = split(&format!("{a:e}"));
    if !may_tie(a) {
        return (digits, exp);
    }
    let n = digits.len();
    // A tie means the exact value's digits after the first n are exactly 5000...; check cheaply
    // with a few more digits, and only then against the full exact expansion.
    let (probe, probe_exp) = split(&format!("{a:.*e}", n + 3));
    if probe_exp != exp || &probe[n..] != "5000" {
        return (digits, exp);
    }
    let (exact, _) = split(&format!("{a:.800e}"));
    if !(exact[n..].starts_with('5') && exact[n + 1..].bytes().all(|b| b == b'0')) {
        return (digits, exp);
    }
    let mut even = exact.as_bytes()[..n].to_vec();
    match even[n - 1] {
        // Rounding down already ends in an even digit.
        b'0' | b'2' | b'4' | b'6' | b'8' => {}
        // Rounding up from a 9 carries into a shorter number, which is not a tie candidate.
        b'9' => return (digits, exp),
        _ => even[n - 1] += 1,
    }
    let even = String::from_utf8(even).unwrap_or_default();
    let (first, rest) = even.split_at(1);
    if format!("{first}.{rest}e{exp}").parse::<f64>() == Ok(a) {
        (even, exp)
    } else {
        (digits, exp)
    }
}

/// Whether `a`'s exact decimal value is short enough (at most 18 significant digits) to sit
/// exactly between two shortest candidates. With `a = m * 2^e`, `m` odd and `e < -26`, the
/// exact value's digits are those of the odd number `m * 5^-e`, at least 19 of them.
fn may_tie(a: f64) -> bool {
    let bits = a.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let fraction = bits & ((1 << 52) - 1);
    let (m, e) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), biased - 1075)
    };
    m != 0 && e + i64::from(m.trailing_zeros()) >= -26
}

/// Python's `a == b` on two values `json.loads` returned.
///
/// `json.loads` hands out one shared NaN object, and Python compares list items and dict
/// values by identity first: so `NaN == NaN` is false, but `[NaN] == [NaN]` and
/// `{"a": NaN} == {"a": NaN}` are true.
pub fn py_eq(a: &Value, b: &Value) -> bool {
    eq(a, b, false)
}

/// [`py_eq`] on two values given as their [`dumps`] text at the same indent (as
/// [`loads_outline`] writes them), parsing them only when the text cannot tell.
///
/// `dumps` writes a value one way, so equal texts are equal values, but for a bare `NaN`
/// (`NaN != NaN`). Unequal texts may still be equal values: `1` and `1.0`, `0` and `-0.0`,
/// `true` and `1`, the same keys in another order. The texts are walked side by side: the
/// first pair of scalars at the same place that Python finds unequal settles it; a key where
/// the other text has another key (maybe just reordered) leaves it to the trees.
pub fn text_eq(a: &str, b: &str) -> bool {
    if a == b {
        return a != "NaN";
    }
    side_by_side(a, b).unwrap_or_else(|| match (loads(a), loads(b)) {
        (Ok(x), Ok(y)) => py_eq(&x, &y),
        _ => false,
    })
}

fn side_by_side(a: &str, b: &str) -> Option<bool> {
    let mut p = Parser::new(a);
    let mut q = Parser::new(b);
    let is_punct = |c: u8| matches!(c, b'{' | b'}' | b'[' | b']' | b':' | b',');
    loop {
        p.skip_ws();
        q.skip_ws();
        let (c, d) = match (p.bytes.get(p.pos), q.bytes.get(q.pos)) {
            (None, None) => return Some(true),
            (Some(&c), Some(&d)) => (c, d),
            _ => return None,
        };
        if is_punct(c) || is_punct(d) {
            // A dict against a list or a scalar, or containers of different lengths.
            if c != d {
                return Some(false);
            }
            p.pos += 1;
            q.pos += 1;
            continue;
        }
        let s = p.token().filter(|s| !s.is_empty())?;
        let t = q.token().filter(|t| !t.is_empty())?;
        if s == t {
            continue;
        }
        if c == b'"' || d == b'"' {
            p.skip_ws();
            q.skip_ws();
            let key = p.bytes.get(p.pos) == Some(&b':') || q.bytes.get(q.pos) == Some(&b':');
            return if key { None } else { Some(false) };
        }
        if !eq(&loads(s).ok()?, &loads(t).ok()?, true) {
            return Some(false);
        }
    }
}

fn eq(a: &Value, b: &Value, nested: bool) -> bool {
    use Value::*;
    match (a, b) {
        (Null, Null) => true,
        (Str(x), Str(y)) => x == y,
        (Array(x), Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| eq(p, q, true)),
        (Object(x), Object(y)) => x.len() == y.len() && object_eq(x, y),
        (Float(x), Float(y)) => x == y || (nested && x.is_nan() && y.is_nan()),
        _ => match (number(a), number(b)) {
            (Some(Num::Int(x)), Some(Num::Int(y))) => x == y,
            (Some(Num::Int(i)), Some(Num::Float(f))) | (Some(Num::Float(f)), Some(Num::Int(i))) => {
                int_eq_float(i, f)
            }
            _ => false,
        },
    }
}

fn object_eq(x: &[(String, Value)], y: &[(String, Value)]) -> bool {
    if x.len() <= 8 {
        return x.iter().all(|(k, v)| {
            y.iter()
                .find(|(k2, _)| k2 == k)
                .is_some_and(|(_, w)| eq(v, w, true))
        });
    }
    let index: FxHashMap<&str, &Value> = y.iter().map(|(k, v)| (k.as_str(), v)).collect();
    x.iter()
        .all(|(k, v)| index.get(k.as_str()).is_some_and(|w| eq(v, w, true)))
}

enum Num<'a> {
    Int(&'a str),
    Float(f64),
}

fn number(v: &Value) -> Option<Num<'_>> {
    match v {
        Value::Bool(b) => Some(Num::Int(if *b { "1" } else { "0" })),
        Value::Int(s) => Some(Num::Int(s)),
        Value::Float(f) => Some(Num::Float(*f)),
        _ => None,
    }
}

/// Exact comparison, as Python does it: 2**53 + 1 is not 9007199254740992.0.
fn int_eq_float(int: &str, f: f64) -> bool {
    if !f.is_finite() || f.fract() != 0.0 {
        return false;
    }
    if f == 0.0 {
        return int == "0";
    }
    // `{:.0}` prints an integral f64's exact decimal value.
    format!("{f:.0}") == int
}

/// The number of distinct keys across every bucket of a record file, for summaries.
pub fn count_configs(record: &Value) -> usize {
    match record {
        Value::Object(buckets) => buckets
            .iter()
            .map(|(_, b)| match b {
                Value::Object(keys) => keys.len(),
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Value {
        loads(text).expect("valid JSON")
    }

    fn err(text: &str) -> Error {
        loads(text).expect_err("invalid JSON")
    }

    #[test]
    fn float_repr_matches_python() {
        let cases = [
            (1e-5, "1e-05"),
            (1e16, "1e+16"),
            (1.5e300, "1.5e+300"),
            (0.0001, "0.0001"),
            (100.0, "100.0"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (0.1, "0.1"),
            (1e15, "1000000000000000.0"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (9999999999999998.0, "9999999999999998.0"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-2.5e-7, "-2.5e-07"),
            (87_438_742_517_864.0 + 0.125, "87438742517864.12"),
            (-1_425_502_010_969_177.0 - 0.25, "-1425502010969177.2"),
            (149_577_321_000_034.0 + 0.625, "149577321000034.62"),
            (0.375, "0.375"),
            (0.00012345, "0.00012345"),
            (1.0 / 3.0, "0.3333333333333333"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "repr of {f:e}");
        }
    }

    #[test]
    fn dumps_matches_python_indent_2() {
        let v = load(r#"{"a": [1, 2.0, {}], "b": {"c": [], "d": null, "e": true}, "f": "x"}"#);
        let want = "{\n  \"a\": [\n    1,\n    2.0,\n    {}\n  ],\n  \"b\": {\n    \"c\": [],\n    \"d\": null,\n    \"e\": true\n  },\n  \"f\": \"x\"\n}\n";
        assert_eq!(dumps(&v), want);
        assert_eq!(dumps(&load("{}")), "{}\n");
        assert_eq!(dumps(&load("[]")), "[]\n");
    }

    #[test]
    fn strings_escape_only_what_python_escapes() {
        let v = Value::Str("q\"b\\n\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f}\u{2028}é😀/".into());
        assert_eq!(
            dumps(&v),
            "\"q\\\"b\\\\n\\n\\r\\t\\b\\f\\u0001\\u001f\u{7f}\u{2028}é😀/\"\n"
        );
    }

    #[test]
    fn escapes_and_surrogate_pairs_decode() {
        assert_eq!(
            load(r#""\ud83d\ude00 \u00e9 \/ \b""#),
            Value::Str("😀 é / \u{8}".into())
        );
        assert_eq!(load(r#""\u00E9""#), Value::Str("é".into()));
    }

    #[test]
    fn lone_surrogates_are_errors() {
        assert!(err(r#""\ud800""#).message.contains("lone surrogate"));
        assert!(err(r#""\udc00x""#).message.contains("lone surrogate"));
        assert!(err(r#""\ud800\u0041""#).message.contains("lone surrogate"));
    }

    #[test]
    fn numbers_follow_python_types() {
        assert_eq!(load("-0"), Value::Int("0".into()));
        assert_eq!(load("12"), Value::Int("12".into()));
        let big = "123456789012345678901234567890";
        assert_eq!(load(big), Value::Int(big.into()));
        assert_eq!(load("1.0"), Value::Float(1.0));
        assert_eq!(load("1E2"), Value::Float(100.0));
        assert_eq!(load("1e400"), Value::Float(f64::INFINITY));
        assert_eq!(load("-1e400"), Value::Float(f64::NEG_INFINITY));
        assert_eq!(load("-Infinity"), Value::Float(f64::NEG_INFINITY));
        assert!(matches!(load("NaN"), Value::Float(f) if f.is_nan()));
        assert!(matches!(load("-0.0"), Value::Float(f) if f == 0.0 && f.is_sign_negative()));
    }

    #[test]
    fn malformed_numbers_are_rejected() {
        for bad in [
            "01", "1.", "1e", "1e+", "-", "+1", ".5", "-NaN", "infinity", "0x1",
        ] {
            assert!(loads(bad).is_err(), "{bad} must be rejected");
        }
        let huge = "9".repeat(MAX_INT_DIGITS + 1);
        assert!(err(&huge).message.contains("4300"));
        assert!(loads(&"9".repeat(MAX_INT_DIGITS)).is_ok());
    }

    #[test]
    fn errors_carry_python_line_and_column() {
        let e = err("{\n  \"a\": 1,\n  \"b\" 2}");
        assert_eq!((e.line, e.column), (3, 7));
        assert!(e.message.contains("':'"), "{e}");
        let e = err("{\"é\": x}");
        assert_eq!((e.line, e.column), (1, 7));
        assert_eq!(err("").to_string(), "1:1: expecting value");
        assert!(err("{} x").message.contains("extra data"));
        assert!(err("\u{feff}{}").message.contains("BOM"));
        assert!(err("\"a\nb\"").message.contains("control character"));
        assert!(err("\"abc").message.contains("unterminated"));
        assert!(err(r#""\x""#).message.contains("\\escape"));
        assert!(err(r#""\u12g4""#).message.contains("\\uXXXX"));
        assert!(err("[1,]").message.contains("expecting value"));
        assert!(err("{\"a\":1,}").message.contains("property name"));
        assert!(err("\u{b}1").message.contains("expecting value"));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert!(err(&deep).message.contains("nested deeper"));
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(loads(&ok).is_ok());
    }

    #[test]
    fn repeated_keys_keep_first_position_and_last_value() {
        let v = load(r#"{"a": 1, "b": 2, "a": 3}"#);
        let want = Value::Object(vec![
            ("a".into(), Value::Int("3".into())),
            ("b".into(), Value::Int("2".into())),
        ]);
        assert_eq!(v, want);
        let many: Vec<String> = (0..20).map(|i| format!("\"k{}\": {i}", i % 7)).collect();
        let Value::Object(entries) = load(&format!("{{{}}}", many.join(","))) else {
            panic!("not an object");
        };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["k0", "k1", "k2", "k3", "k4", "k5", "k6"]);
        assert_eq!(entries[0].1, Value::Int("14".into()));
    }

    #[test]
    fn equality_is_pythons() {
        let eq = |a: &str, b: &str| py_eq(&load(a), &load(b));
        assert!(eq("1", "1.0"));
        assert!(eq("true", "1"));
        assert!(eq("true", "1.0"));
        assert!(eq("false", "0"));
        assert!(eq("0", "-0.0"));
        assert!(!eq("true", "2"));
        assert!(!eq("null", "0"));
        assert!(!eq("\"1\"", "1"));
        assert!(!eq("9007199254740993", "9007199254740992.0"));
        assert!(eq("9007199254740992", "9007199254740992.0"));
        assert!(eq(
            "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160",
            "1e300"
        ));
        assert!(!eq("NaN", "NaN"));
        assert!(eq("[NaN]", "[NaN]"));
        assert!(eq("{\"a\": NaN}", "{\"a\": NaN}"));
        assert!(eq("[[NaN]]", "[[NaN]]"));
        assert!(eq("{\"a\": 1, \"b\": [2]}", "{\"b\": [2.0], \"a\": true}"));
        assert!(!eq("{\"a\": 1}", "{\"a\": 1, \"b\": 2}"));
        assert!(!eq("[1, 2]", "[2, 1]"));
        assert!(!eq("Infinity", "1e308"));
        assert!(eq("Infinity", "1e400"));
        assert!(!eq("[1]", "{}"));
    }

    #[test]
    fn round_trips_through_dumps() {
        let text = "{\n  \"k\": [\n    1e-05,\n    NaN,\n    -Infinity,\n    \"\\u0000\u{2028}\"\n  ]\n}\n";
        assert_eq!(dumps(&load(text)), text);
    }

    /// Checks an outline against the tree: same keys in the same order, texts as `dumps`.
    fn same_as_tree(out: &str, outline: &Outline, tree: &Value, level: usize) {
        match (outline, tree) {
            (Outline::Object(entries), Value::Object(tree)) => {
                assert_eq!(entries.len(), tree.len());
                for ((key, o), (name, t)) in entries.iter().zip(tree) {
                    assert_eq!(
                        &out[key.clone()],
                        dumps(&Value::Str(name.clone())).trim_end()
                    );
                    same_as_tree(out, o, t, level + 1);
                }
            }
            (Outline::Text(span), tree) => {
                let mut want = String::new();
                write_value(&mut want, tree, level);
                assert_eq!(&out[span.clone()], want);
            }
            (Outline::Other(kind), tree) => assert_eq!(*kind, tree.kind()),
            (o, t) => panic!("outline {o:?} against {t:?}"),
        }
    }

    #[test]
    fn outline_texts_are_what_dumps_writes() {
        let many: Vec<String> = (0..20).map(|i| format!("\"k{}\": {i}", i % 17)).collect();
        let docs = [
            r#"{"k": {"(1, 'f16')": {"BLOCK": 64, "ms": 0.1, "w": -0, "f": -0.0}}}"#.to_owned(),
            r#"{"k": {"a": [1e16, 1E-5, 2.50, 1e400, -Infinity, NaN, true, null, "é\u00e9\n"]}}"#
                .to_owned(),
            r#"{"k": {"a": {"x": 1, "y": 2, "x": [3]}, "b": {}, "c": [], "d": [[{}]]}}"#.to_owned(),
            r#"{"k\"": {"a\\": 1, "b": 2, "a\\": 3}, "j": [1], "k\"": {"c": 4}}"#.to_owned(),
            format!(
                r#"{{"k": {{"big": {{{}}}, "n": 123456789012345678901234567890}}}}"#,
                many.join(",")
            ),
            format!(
                r#"{{"k": {{"deep": {}1{}}}}}"#,
                "[".repeat(900),
                "]".repeat(900)
            ),
            "[1, 2]".to_owned(),
            r#"{"k": 3, "j": {"a": "x"}}"#.to_owned(),
        ];
        for doc in &docs {
            let mut out = String::new();
            let outline = loads_outline(doc, 2, &mut out).expect("valid JSON");
            same_as_tree(&out, &outline, &load(doc), 0);
        }
    }

    #[test]
    fn outline_rejects_what_loads_rejects_with_the_same_error() {
        let deep = format!(r#"{{"k": {{"a": {}}}}}"#, "[".repeat(MAX_DEPTH));
        for bad in [
            r#"{"k": {"a": [1, 2"#,
            r#"{"k": {"a": 01}}"#,
            r#"{"k": {"a": {"b" 1}}}"#,
            r#"{"k": {"a": "\ud800"}}"#,
            r#"{"k": {"a": 1}} x"#,
            "\u{feff}{}",
            r#"{"k": {"a": [1,]}}"#,
            r#"{"k": {1: 2}}"#,
            &deep,
        ] {
            let mut out = String::new();
            assert_eq!(loads_outline(bad, 2, &mut out), Err(err(bad)), "{bad}");
        }
    }

    #[test]
    fn text_eq_is_python_eq_on_dumps_texts() {
        let eq = |a: &str, b: &str| {
            let text = |s: &str| {
                let mut out = String::new();
                write_value(&mut out, &load(s), 2);
                out
            };
            let got = text_eq(&text(a), &text(b));
            assert_eq!(got, py_eq(&load(a), &load(b)), "{a} == {b}");
            got
        };
        // A bare NaN is not equal to itself; inside a list or dict, json.loads's one shared
        // NaN object is, by identity.
        assert!(!eq("NaN", "NaN"));
        assert!(eq("[NaN]", "[NaN]"));
        assert!(eq(r#"{"a": {"b": NaN}}"#, r#"{"a": {"b": NaN}}"#));
        assert!(!eq("[NaN]", "[1]"));
        assert!(eq("0", "-0.0"));
        assert!(eq("[-0.0]", "[0]"));
        assert!(eq("1", "1.0"));
        assert!(eq(r#"{"a": 1, "b": true}"#, r#"{"a": 1.0, "b": 1}"#));
        assert!(eq(r#"{"a": 1, "b": [2]}"#, r#"{"b": [2], "a": 1}"#));
        assert!(!eq(r#"{"a": 1, "b": [2]}"#, r#"{"b": [3], "a": 1}"#));
        assert!(!eq(r#"{"a": 1}"#, r#"{"a": 1, "b": 2}"#));
        assert!(!eq(r#"{"a": 1}"#, r#"{"b": 1}"#));
        assert!(!eq("[1, 2]", "[1, 2, 3]"));
        assert!(!eq("[1]", r#"{"a": 1}"#));
        assert!(!eq(r#"["1"]"#, "[1]"));
        assert!(!eq(r#"["a\"b"]"#, r#"["a\"c"]"#));
        assert!(!eq("9007199254740993", "9007199254740992.0"));
        assert!(eq("[1e400]", "[Infinity]"));
    }
}
