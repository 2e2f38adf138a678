//! `loads_outline`, what warmup-merge reads record files with: the objects at the top of a
//! document, and every value below a chosen depth only as its `dumps` text, copied straight
//! from the input where it already is that text.

use super::dump::{newline_indent, write_float, write_value};
use super::parse::{canonical_int, dedup, parse_document, repeats, Fail, Parser};
use super::Error;
use std::convert::identity;

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
    /// A value above the depth that is not an object: only its kind, as
    /// [`Value::kind`](super::Value::kind) says.
    Other(&'static str),
}

/// `json.loads(text)` (accepting and rejecting exactly what [`loads`](super::loads) does, with
/// the same errors) kept as an [`Outline`] whose texts are appended to `out`.
///
/// A merge needs a record file's configs only to compare and rewrite them; as text they cost
/// one copy each, where a [`Value`](super::Value) tree costs a dozen allocations to build and
/// to free.
pub fn loads_outline(text: &str, depth: usize, out: &mut String) -> Result<Outline, Error> {
    parse_document(text, |p| p.outline(0, depth, out))
}

impl<'a> Parser<'a> {
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
        let mut entries = Vec::new();
        self.items(b'}', identity, |p| {
            let start = out.len();
            p.key(|p| p.string_text(out))?;
            let key = start..out.len();
            entries.push((key, p.outline(level + 1, depth, out)?));
            Ok(())
        })?;
        // `dumps` writes a string one way only, so equal keys have equal texts.
        let found = repeats(entries.iter().map(|(k, _)| &out[k.clone()]));
        dedup(&mut entries, found);
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

    /// [`Self::value_text`] without a tree: text that is already what `dumps` writes (ints,
    /// words, strings without escapes) is copied, strings with escapes and floats are rewritten
    /// in `dumps`'s form. `None` where that does not suffice.
    fn copy_text(&mut self, out: &mut String, level: usize) -> Option<()> {
        match *self.bytes.get(self.pos)? {
            b'"' => self.string_text(out).ok()?,
            b'{' => self.object_text(out, level)?,
            b'[' => self.container_text(out, level, b']', |p, out| p.copy_text(out, level + 1))?,
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

    fn object_text(&mut self, out: &mut String, level: usize) -> Option<()> {
        // Configs hold a few keys; a bigger object is left to the tree and its hashed dedup.
        let mut keys = [(0, 0); 16];
        let mut n = 0;
        self.container_text(out, level, b'}', |p, out| {
            if n == keys.len() || p.bytes.get(p.pos) != Some(&b'"') {
                return None;
            }
            let start = out.len();
            p.string_text(out).ok()?;
            let key = &out[start..];
            if keys[..n].iter().any(|&(a, b)| &out[a..b] == key) {
                return None;
            }
            keys[n] = (start, out.len());
            n += 1;
            if !p.colon() {
                return None;
            }
            out.push_str(": ");
            p.copy_text(out, level + 1)
        })
    }

    /// [`Self::copy_text`] of the array or object at `pos`, whose items `item` copies.
    fn container_text(
        &mut self,
        out: &mut String,
        level: usize,
        close: u8,
        mut item: impl FnMut(&mut Self, &mut String) -> Option<()>,
    ) -> Option<()> {
        out.push(char::from(self.bytes[self.pos]));
        let mut count = 0;
        self.items(
            close,
            |_| (),
            |p| {
                if count > 0 {
                    out.push(',');
                }
                count += 1;
                newline_indent(out, level + 1);
                item(p, out).ok_or(())
            },
        )
        .ok()?;
        if count > 0 {
            newline_indent(out, level);
        }
        out.push(char::from(close));
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{err, load};
    use crate::{Value, MAX_DEPTH};

    /// Checks an outline against the tree: same keys in the same order, texts as `dumps`.
    fn same_as_tree(out: &str, outline: &Outline, tree: &Value, level: usize) {
        match (outline, tree) {
            (Outline::Object(entries), Value::Object(tree)) => {
                assert_eq!(entries.len(), tree.len());
                for ((key, o), (name, t)) in entries.iter().zip(tree) {
                    assert_eq!(&out[key.clone()], name.json());
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
            r#"{"k\ud800": {"\ud800": ["\udc00", {"\ud800": "\uD800\u0041"}]}}"#.to_owned(),
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
            r#"{"k": {"a": "\x"}}"#,
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
}
