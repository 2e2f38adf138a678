//! The strict parser behind `json.loads`: what Python accepts and rejects, with its errors, and
//! the cursor that the outline and the text comparison walk documents with.

use super::dump::write_char;
use super::{Error, PyStr, Value};
use rustc_hash::FxHashMap;
use std::convert::identity;
use std::fmt::Write as _;

/// Deeper nesting than this is an error rather than a stack overflow (Python raises
/// `RecursionError` at about the same depth).
pub const MAX_DEPTH: usize = 1000;

/// Python's default cap on the digits of an `int` read from text (`sys.get_int_max_str_digits`).
pub const MAX_INT_DIGITS: usize = 4300;

/// Parses `text` as `json.loads(text)` would, strictly.
pub fn loads(text: &str) -> Result<Value, Error> {
    parse_document(text, Parser::value)
}

/// Reads all of `text` with `parse`: a BOM or anything but whitespace after the value is an
/// error, and an error's byte offset becomes Python's line and column.
pub(super) fn parse_document<'a, T>(
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
pub(super) type Fail = (usize, String);

/// A cursor over a JSON text.
pub(super) struct Parser<'a> {
    pub(super) text: &'a str,
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
    /// How many arrays and objects are open at `pos`.
    pub(super) depth: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            depth: 0,
        }
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

    pub(super) fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    pub(super) fn rest_starts_with(&self, word: &str) -> bool {
        self.bytes[self.pos..].starts_with(word.as_bytes())
    }

    /// Moves past the `:` (and the whitespace around it) after an object's key; `false`,
    /// having moved past the whitespace only, where there is none.
    pub(super) fn colon(&mut self) -> bool {
        self.skip_ws();
        let found = self.bytes.get(self.pos) == Some(&b':');
        if found {
            self.pos += 1;
            self.skip_ws();
        }
        found
    }

    /// Reads the array or object whose opening bracket is at `pos`, through its `close`: `item`
    /// reads each item (for an object, a key, its colon and its value), and this the commas
    /// between. Nesting deeper than [`MAX_DEPTH`] or a missing comma is a [`Fail`], which
    /// `fail` turns into the caller's error.
    pub(super) fn items<E>(
        &mut self,
        close: u8,
        fail: impl FnOnce(Fail) -> E,
        mut item: impl FnMut(&mut Self) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.depth >= MAX_DEPTH {
            return Err(fail((
                self.pos,
                format!("nested deeper than {MAX_DEPTH} levels"),
            )));
        }
        self.depth += 1;
        self.pos += 1;
        self.skip_ws();
        if self.bytes.get(self.pos) != Some(&close) {
            loop {
                item(self)?;
                self.skip_ws();
                match self.bytes.get(self.pos) {
                    Some(&c) if c == close => break,
                    Some(b',') => {
                        self.pos += 1;
                        self.skip_ws();
                    }
                    _ => return Err(fail((self.pos, "expecting ',' delimiter".into()))),
                }
            }
        }
        self.pos += 1;
        self.depth -= 1;
        Ok(())
    }

    /// Reads an object member's key with `read` and moves past the colon after it.
    pub(super) fn key<K>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Result<K, Fail>,
    ) -> Result<K, Fail> {
        if self.bytes.get(self.pos) != Some(&b'"') {
            return Err((
                self.pos,
                "expecting property name enclosed in double quotes".into(),
            ));
        }
        let key = read(self)?;
        if !self.colon() {
            return Err((self.pos, "expecting ':' delimiter".into()));
        }
        Ok(key)
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

    pub(super) fn value(&mut self) -> Result<Value, Fail> {
        match self.bytes.get(self.pos) {
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
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

    fn object(&mut self) -> Result<Value, Fail> {
        let mut entries = Vec::new();
        self.items(b'}', identity, |p| {
            let key = p.key(Self::string)?;
            entries.push((key, p.value()?));
            Ok(())
        })?;
        let found = repeats(entries.iter().map(|(k, _)| k.json()));
        dedup(&mut entries, found);
        Ok(Value::Object(entries))
    }

    fn array(&mut self) -> Result<Value, Fail> {
        let mut items = Vec::new();
        self.items(b']', identity, |p| {
            items.push(p.value()?);
            Ok(())
        })?;
        Ok(Value::Array(items))
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
    pub(super) fn scan_number(&mut self) -> Result<(&'a str, bool), Fail> {
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

    /// The string whose opening quote is at `pos`.
    pub(super) fn string(&mut self) -> Result<PyStr, Fail> {
        let mut json = String::new();
        self.string_text(&mut json)?;
        Ok(PyStr(json))
    }

    /// Appends the [`PyStr`] text (what `dumps` writes, quotes included) of the string whose
    /// opening quote is at `pos`: runs without escapes are copied, escapes are decoded and
    /// written again as `dumps` writes their characters. A `\uXXXX` surrogate that does not
    /// pair up, which Python keeps in its `str`, stays an escape, in lowercase.
    pub(super) fn string_text(&mut self, out: &mut String) -> Result<(), Fail> {
        let quote = self.pos;
        let unterminated = || (quote, "unterminated string".to_owned());
        let b = self.bytes;
        out.push('"');
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
                    out.push('"');
                    return Ok(());
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
                        write_char(out, c);
                        i += 2;
                        continue;
                    }
                    let unit = self
                        .hex4(i + 2)
                        .ok_or((i, "invalid \\uXXXX escape".into()))?;
                    i += 6;
                    let low = (0xD800..=0xDBFF)
                        .contains(&unit)
                        .then(|| self.low_surrogate(i))
                        .flatten();
                    match low.map(|low| 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)) {
                        Some(pair) => {
                            i += 6;
                            out.extend(char::from_u32(pair));
                        }
                        None => match char::from_u32(unit) {
                            Some(c) => write_char(out, c),
                            None => {
                                let _ = write!(out, "\\u{unit:04x}");
                            }
                        },
                    }
                }
                Some(_) => return Err((i, "invalid control character in string".into())),
            }
        }
    }

    /// The low surrogate of a `\uXXXX` escape at `at`, if one is there.
    fn low_surrogate(&self, at: usize) -> Option<u32> {
        (self.bytes.get(at) == Some(&b'\\') && self.bytes.get(at + 1) == Some(&b'u'))
            .then(|| self.hex4(at + 2))
            .flatten()
            .filter(|u| (0xDC00..=0xDFFF).contains(u))
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.bytes.get(at..at + 4)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    }
}

/// An int's text as Python prints the int: `-0` is `0`; too many digits is Python's error.
pub(super) fn canonical_int(text: &str, start: usize) -> Result<&str, Fail> {
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

/// (first index, later index) for every repeated one of an object's key `names`, in input
/// order, for [`dedup`].
pub(super) fn repeats<'k>(
    names: impl ExactSizeIterator<Item = &'k str> + Clone,
) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    if names.len() <= 8 {
        for (i, name) in names.clone().enumerate().skip(1) {
            if let Some(j) = names.clone().take(i).position(|k| k == name) {
                found.push((j, i));
            }
        }
    } else {
        let mut first: FxHashMap<&str, usize> =
            FxHashMap::with_capacity_and_hasher(names.len(), Default::default());
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

/// Gives each of the [`repeats`] its last value at its first position and removes the later
/// entries, as a Python dict does.
pub(super) fn dedup<K, V>(entries: &mut Vec<(K, V)>, repeats: Vec<(usize, usize)>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{err, load};

    #[test]
    fn escapes_decode_to_the_text_dumps_writes() {
        let text = |s: &str| match load(s) {
            Value::Str(s) => s.json().to_owned(),
            other => panic!("not a string: {other:?}"),
        };
        assert_eq!(text(r#""\ud83d\ude00 \u00e9 \/ \b""#), "\"😀 é / \\b\"");
        assert_eq!(text(r#""\u00E9\u0022\u005c\u001F""#), r#""é\"\\\u001f""#);
    }

    #[test]
    fn lone_surrogates_are_kept_as_python_keeps_them() {
        let text = |s: &str| match load(s) {
            Value::Str(s) => s.json().to_owned(),
            other => panic!("not a string: {other:?}"),
        };
        assert_eq!(text(r#""\ud800""#), r#""\ud800""#);
        assert_eq!(text(r#""\uDC00x""#), r#""\udc00x""#);
        assert_eq!(text(r#""\ud800\u0041""#), r#""\ud800A""#);
        assert_eq!(text(r#""\ud800\ud800\udc00""#), "\"\\ud800\u{10000}\"");
        assert_eq!(load(r#""\ud800""#), load(r#""\uD800""#));
        assert_ne!(load(r#""\ud800""#), load(r#""\\ud800""#));
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
            (PyStr::new("a"), Value::Int("3".into())),
            (PyStr::new("b"), Value::Int("2".into())),
        ]);
        assert_eq!(v, want);
        let many: Vec<String> = (0..20).map(|i| format!("\"k{}\": {i}", i % 7)).collect();
        let Value::Object(entries) = load(&format!("{{{}}}", many.join(","))) else {
            panic!("not an object");
        };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.json()).collect();
        let want: Vec<String> = (0..7).map(|i| format!("\"k{i}\"")).collect();
        assert_eq!(keys, want);
        assert_eq!(entries[0].1, Value::Int("14".into()));
    }
}
