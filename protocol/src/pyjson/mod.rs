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
//!
//! `parse` holds the strict parser and [`loads`]; `outline` [`loads_outline`], a document's
//! top levels with the values below kept as text; `dump` [`dumps`], with Python's float repr
//! and string escapes; `eq` Python's `==`, on values ([`py_eq`]) and on their `dumps` texts
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
