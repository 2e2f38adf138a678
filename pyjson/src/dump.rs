//! `json.dumps(v, indent=2, ensure_ascii=False)`: the layout, the few escapes Python writes in
//! strings, and Python's float repr, which no Rust formatter prints.

use super::Value;
use std::fmt;
use std::fmt::Write as _;

/// `json.dumps(value, indent=2, ensure_ascii=False) + "\n"`.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, 0);
    out.push('\n');
    out
}

/// Starts a line at indent `level`.
pub(super) fn newline_indent(out: &mut String, level: usize) {
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

/// [`dumps`] of `value`, without the final newline, for a value at indent `level`.
pub(super) fn write_value(out: &mut String, value: &Value, level: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(text) => out.push_str(text),
        Value::Float(f) => write_float(out, *f),
        Value::Str(s) => out.push_str(s.json()),
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
                out.push_str(key.json());
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
pub(super) fn write_str(out: &mut String, s: &str) {
    out.push('"');
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        if b == b'"' || b == b'\\' || b < 0x20 {
            out.push_str(&s[run..i]);
            write_escape(out, b);
            run = i + 1;
        }
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// One character of a string as [`write_str`] writes it.
pub(super) fn write_char(out: &mut String, c: char) {
    match u8::try_from(c) {
        Ok(b) if b == b'"' || b == b'\\' || b < 0x20 => write_escape(out, b),
        _ => out.push(c),
    }
}

/// The escape `dumps` writes for `"`, `\` or a control character `b`.
fn write_escape(out: &mut String, b: u8) {
    let esc = match b {
        b'"' => "\\\"",
        b'\\' => "\\\\",
        b'\n' => "\\n",
        b'\r' => "\\r",
        b'\t' => "\\t",
        0x08 => "\\b",
        0x0c => "\\f",
        _ => {
            let _ = write!(out, "\\u{b:04x}");
            return;
        }
    };
    out.push_str(esc);
}

/// A float as Python's `json` writes it: `repr(f)` (shortest digits that read back the same,
/// exponent form iff the decimal exponent is below -4 or at least 16), or `NaN`, `Infinity`,
/// `-Infinity`. Record files hold a float per config, so the common case formats on the stack
/// rather than through a few heap strings.
pub(super) fn write_float(out: &mut String, f: f64) {
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

/// The shortest digits that read back as `a` (finite, not negative, one that [`may_tie`]) and
/// the decimal exponent of the first one. Rust's `{:e}` finds them; where two candidates of
/// that length lie exactly as far from `a`, Python's repr takes the one ending in an even
/// digit, and so do we.
fn shortest_digits(a: f64) -> (String, i32) {
    let split = |sci: &str| -> (String, i32) {
        let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
        (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
    };
    let (digits, exp) = split(&format!("{a:e}"));
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
    let (m, e) = crate::f64_parts(a);
    m != 0 && e + i64::from(m.trailing_zeros()) >= -26
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::load;
    use crate::PyStr;

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
            let mut repr = String::new();
            write_float(&mut repr, f);
            assert_eq!(repr, want, "repr of {f:e}");
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
        let v = Value::Str(PyStr::new(
            "q\"b\\n\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f}\u{2028}é😀/",
        ));
        assert_eq!(
            dumps(&v),
            "\"q\\\"b\\\\n\\n\\r\\t\\b\\f\\u0001\\u001f\u{7f}\u{2028}é😀/\"\n"
        );
    }

    #[test]
    fn round_trips_through_dumps() {
        let text = "{\n  \"k\": [\n    1e-05,\n    NaN,\n    -Infinity,\n    \"\\u0000\u{2028}\"\n  ]\n}\n";
        assert_eq!(dumps(&load(text)), text);
    }
}
