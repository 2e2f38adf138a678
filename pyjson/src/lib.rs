//! Python's `json` module, in Rust, byte for byte: `json.loads` (its strict defaults),
//! `json.dumps(v, indent=2, ensure_ascii=False)`, and Python's `==` on what `json.loads` returns.
//!
//! The harness writes record files with Python's `json` and its defaults, and the warmup tools
//! must read, compare and rewrite them exactly as Python would. serde_json cannot stand in for
//! that. What Python does and this crate reproduces:
//!
//! - `json.loads` accepts `NaN`, `Infinity` and `-Infinity`; a repeated key keeps its last value
//!   at its first position (a dict); integers have any size up to Python's 4300-digit limit;
//!   a string may hold a lone surrogate (`"\ud800"`), which is a valid Python `str`; errors are
//!   positioned by line and column as `JSONDecodeError` positions them.
//! - `json.dumps(v, indent=2, ensure_ascii=False)` writes floats as `repr` does (`1e-05`,
//!   `1e+16`, `100.0`, ties to even), escapes only `"`, `\` and control characters, and writes
//!   the layout of `indent=2`. A lone surrogate, which UTF-8 cannot carry, is written as its
//!   `\udxxx` escape: what `.encode("utf-8", "backslashreplace")` gives, and what `json.loads`
//!   reads back to the same `str`.
//! - `==`: `1 == 1.0 == True`, big ints against floats compared exactly, dicts regardless of key
//!   order, and a NaN equal to itself inside a list or dict (`json.loads` hands out one NaN
//!   object, and Python compares items by identity first) but not alone.
//!
//! `parse` holds the strict parser and [`loads`]; `outline` [`loads_outline`], a document's
//! top levels with the values below kept as text; `dump` [`dumps`], with Python's float repr and
//! string escapes; `eq` Python's `==`, on values ([`py_eq`]) and on their `dumps` texts
//! ([`text_eq`]).

mod dump;
mod eq;
mod outline;
mod parse;

use std::fmt;

pub use dump::dumps;
pub use eq::{py_eq, text_eq};
pub use outline::{loads_outline, Outline, Span};
pub use parse::{loads, MAX_DEPTH, MAX_INT_DIGITS};

/// A finite float as `m * 2^e`, `m` its integer significand (the implicit bit included, 0 for
/// zeros) and `e` its binary exponent: what exact conversions of a float to decimal digits or to
/// an int start from.
pub fn f64_parts(f: f64) -> (u64, i64) {
    let bits = f.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let fraction = bits & ((1 << 52) - 1);
    if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), biased - 1075)
    }
}

/// A value as `json.loads` returns it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// An integer of any size, as canonical decimal text (no leading zeros, no `-0`).
    Int(String),
    Float(f64),
    Str(PyStr),
    Array(Vec<Value>),
    /// A dict: keys unique, in insertion order; a repeated key's last value sits at the
    /// position of its first occurrence, as in a Python dict.
    Object(Vec<(PyStr, Value)>),
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

/// A Python `str` as `json.loads` returns it, kept as the text [`dumps`] writes for it, quotes
/// included. A `str` may hold lone surrogates, which Rust's `String` cannot; as text they are
/// `\udxxx` escapes. `dumps` writes a string one way only, so two strings are equal exactly when
/// their texts are, and writing one is a copy.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PyStr(String);

impl PyStr {
    /// The `str` holding `text`.
    pub fn new(text: &str) -> Self {
        let mut json = String::with_capacity(text.len() + 2);
        dump::write_str(&mut json, text);
        PyStr(json)
    }

    /// What `json.dumps(s, ensure_ascii=False)` writes for it, quotes included; also how
    /// messages name a kernel or key.
    pub fn json(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PyStr {
    /// The JSON text, quotes included: exact, and readable in a message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
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

#[cfg(test)]
mod tests {
    use super::{loads, Error, Value};

    /// [`loads`] of a text the test knows is valid.
    pub(super) fn load(text: &str) -> Value {
        loads(text).expect("valid JSON")
    }

    /// [`loads`]'s error on a text the test knows is invalid.
    pub(super) fn err(text: &str) -> Error {
        loads(text).expect_err("invalid JSON")
    }
}
