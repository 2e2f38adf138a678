//! Python's `==` on what `json.loads` returns, and the same test on two values' `dumps` texts,
//! which warmup-merge compares a config's copies with, mostly without parsing them.

use super::parse::Parser;
use super::{loads, PyStr, Value};
use rustc_hash::FxHashMap;

/// Python's `a == b` on two values `json.loads` returned.
///
/// `json.loads` hands out one shared NaN object, and Python compares list items and dict
/// values by identity first: so `NaN == NaN` is false, but `[NaN] == [NaN]` and
/// `{"a": NaN} == {"a": NaN}` are true.
pub fn py_eq(a: &Value, b: &Value) -> bool {
    eq(a, b, false)
}

/// [`py_eq`] on two values given as their [`dumps`](super::dumps) text at the same indent (as
/// [`loads_outline`](super::loads_outline) writes them), parsing them only when the text cannot
/// tell.
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

fn object_eq(x: &[(PyStr, Value)], y: &[(PyStr, Value)]) -> bool {
    if x.len() <= 8 {
        return x.iter().all(|(k, v)| {
            y.iter()
                .find(|(k2, _)| k2 == k)
                .is_some_and(|(_, w)| eq(v, w, true))
        });
    }
    let index: FxHashMap<&str, &Value> = y.iter().map(|(k, v)| (k.json(), v)).collect();
    x.iter()
        .all(|(k, v)| index.get(k.json()).is_some_and(|w| eq(v, w, true)))
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

impl<'a> Parser<'a> {
    /// The string (quotes and escapes as written) or scalar at `pos`, for [`side_by_side`].
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump::write_value;
    use crate::tests::load;

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
        assert!(eq(r#"["\ud800"]"#, r#"["\uD800"]"#));
        assert!(!eq(r#"["\ud800"]"#, r#"["\udc00"]"#));
    }
}
