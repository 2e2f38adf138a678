//! The value `safe_load` builds, as `json.dumps(value, separators=(",", ":"))` writes it (with
//! its default `ensure_ascii=True`), read off the node graph and the constructor's dicts, so that
//! the text is the one Python gives, with no second YAML reader that could disagree.
//!
//! A value JSON cannot hold (a date or timestamp, `!!binary` bytes, a `!!set`, a dict key that is
//! none of str, int, float, bool and None, an int of more than 4300 digits) makes `json.dumps`
//! raise; such a value has no text (`None`). NaN and the infinities are written as Python writes
//! them (`NaN`, `Infinity`, `-Infinity`).

use crate::composer::{Kind, Node, NodeId};
use crate::constructor::Schema;
use crate::pynum::{construct_float, construct_int};
use crate::resolver::{self, construct_bool};
use std::fmt::Write as _;

/// `json.dumps(value, separators=(",", ":"))` of the value `safe_load` builds for the node `id`,
/// or `None` where `json.dumps` raises.
pub fn to_json(schema: &mut Schema<'_>, id: NodeId) -> Option<String> {
    let mut out = String::new();
    write_value(schema, id, &mut out)?;
    Some(out)
}

fn write_value(schema: &mut Schema<'_>, id: NodeId, out: &mut String) -> Option<()> {
    let doc = schema.doc;
    let node = &doc.nodes[id];
    match &node.kind {
        Kind::Scalar(v) => match node.tag.as_str() {
            resolver::STR => write_str(out, v),
            resolver::INT => out.push_str(&int_text(v)?),
            resolver::FLOAT => write_float(out, construct_float(v)?),
            resolver::BOOL => out.push_str(if construct_bool(v)? { "true" } else { "false" }),
            resolver::NULL => out.push_str("null"),
            // bytes, datetime.date and datetime.datetime: json.dumps raises TypeError.
            _ => return None,
        },
        Kind::Seq(items) => {
            let pairs = node.tag != resolver::SEQ; // !!omap, !!pairs: a list of (key, value)
            out.push('[');
            for (n, &item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                if pairs {
                    let Kind::Map(pair) = &doc.nodes[item].kind else {
                        return None;
                    };
                    let &[(k, v)] = pair.as_slice() else {
                        return None;
                    };
                    out.push('[');
                    write_value(schema, k, out)?;
                    out.push(',');
                    write_value(schema, v, out)?;
                    out.push(']');
                } else {
                    write_value(schema, item, out)?;
                }
            }
            out.push(']');
        }
        Kind::Map(_) => {
            if node.tag != resolver::MAP {
                return None; // !!set: json.dumps raises TypeError
            }
            let dict = schema.dict(id).ok()?;
            out.push('{');
            for (n, &(_, k, v)) in dict.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_key(out, &doc.nodes[k])?;
                out.push(':');
                write_value(schema, v, out)?;
            }
            out.push('}');
        }
    }
    Some(())
}

/// A dict key as json.dumps writes it: str as is, int, float, bool and None as their JSON text
/// in quotes; any other key type raises TypeError.
fn write_key(out: &mut String, node: &Node) -> Option<()> {
    let Kind::Scalar(v) = &node.kind else {
        return None;
    };
    let mut text = String::new();
    match node.tag.as_str() {
        // `=` as a key is the string "=" (flatten_mapping retags it).
        resolver::STR | resolver::VALUE => text.push_str(v),
        resolver::INT => text = int_text(v)?,
        resolver::FLOAT => write_float(&mut text, construct_float(v)?),
        resolver::BOOL => text.push_str(if construct_bool(v)? { "true" } else { "false" }),
        resolver::NULL => text.push_str("null"),
        _ => return None,
    }
    write_str(out, &text);
    Some(())
}

/// A string as json.dumps writes it with `ensure_ascii=True`: `"` and `\` escaped, the short
/// escapes for `\b \f \n \r \t`, every other character outside ' '..='~' as `\uXXXX`
/// (lowercase hex, a surrogate pair above U+FFFF).
fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// `repr(f)`, or `NaN`, `Infinity`, `-Infinity`, as json.dumps writes a float.
fn write_float(out: &mut String, f: f64) {
    let text = pyjson::dumps(&pyjson::Value::Float(f));
    out.push_str(text.trim_end());
}

/// `str()` of the int `safe_load` builds; `None` past Python's digit cap.
fn int_text(value: &str) -> Option<String> {
    construct_int(value)?.to_decimal()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON text of the value the document `yaml` holds.
    fn one(yaml: &str) -> Option<String> {
        let doc = crate::tests::load(yaml);
        let mut schema = Schema::new(&doc, "t.yaml");
        schema.validate().expect("valid");
        to_json(&mut schema, doc.root)
    }

    #[test]
    fn lists_of_numbers_are_written_without_spaces() {
        assert_eq!(one("[64, 1024]").as_deref(), Some("[64,1024]"));
        assert_eq!(
            one("[1.5, 1.0e+16, 1.0e-5, -0.0, 1e16]").as_deref(),
            Some("[1.5,1e+16,1e-05,-0.0,\"1e16\"]")
        );
    }

    #[test]
    fn yaml_1_1_numbers_are_written_as_python_builds_them() {
        assert_eq!(
            one("[0x1F, 017, 0b101, 1_000, 1:30, +5, -0]").as_deref(),
            Some("[31,15,5,1000,90,5,0]")
        );
        assert_eq!(
            one("[1:30.5, .inf, -.inf, .nan]").as_deref(),
            Some("[90.5,Infinity,-Infinity,NaN]")
        );
        assert_eq!(
            one("[0xffffffffffffffffffffffffffffffffff]").as_deref(),
            Some("[87112285931760246646623899502532662132735]")
        );
    }

    #[test]
    fn strings_are_escaped_as_ensure_ascii_does() {
        assert_eq!(
            one(r#"["é\t\"x\"", "😀", "\x7f"]"#).as_deref(),
            Some(r#"["\u00e9\t\"x\"","\ud83d\ude00","\u007f"]"#)
        );
        assert_eq!(
            one("[yes, Off, ~, null, '017']").as_deref(),
            Some(r#"[true,false,null,null,"017"]"#)
        );
    }

    #[test]
    fn dict_keys_become_strings_and_merges_apply() {
        assert_eq!(
            one("{<<: {K: 1, 2: x}, M: 8, 1.5: y, true: z, ~: w, 2: v}").as_deref(),
            Some(r#"{"K":1,"2":"v","M":8,"1.5":"y","true":"z","null":"w"}"#)
        );
    }

    #[test]
    fn values_json_cannot_hold_give_no_text() {
        assert_eq!(one("[2001-12-14]"), None);
        assert_eq!(one("[!!binary aGVsbG8=]"), None);
        assert_eq!(one("!!set {a, b}"), None);
        assert_eq!(one("{2001-12-14: 1}"), None);
        assert_eq!(
            one("!!omap [a: 1, b: 2]").as_deref(),
            Some(r#"[["a",1],["b",2]]"#)
        );
    }
}
