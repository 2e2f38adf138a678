//! PyYAML's YAML 1.1 schema, ported: which tag a plain scalar resolves to (resolver.py's implicit
//! resolvers, same regexes, same first-character tables, same order), and whether a tagged
//! scalar's text is one that SafeConstructor can build (so input `safe_load` rejects is refused).

use crate::pynum::{construct_float, construct_int};
use regex::Regex;
use std::sync::OnceLock;

/// The prefix of every tag in the safe schema (`!!name`).
pub const YAML: &str = "tag:yaml.org,2002:";

pub const STR: &str = "tag:yaml.org,2002:str";
pub const INT: &str = "tag:yaml.org,2002:int";
pub const FLOAT: &str = "tag:yaml.org,2002:float";
pub const BOOL: &str = "tag:yaml.org,2002:bool";
pub const NULL: &str = "tag:yaml.org,2002:null";
pub const BINARY: &str = "tag:yaml.org,2002:binary";
pub const TIMESTAMP: &str = "tag:yaml.org,2002:timestamp";
pub const MERGE: &str = "tag:yaml.org,2002:merge";
pub const VALUE: &str = "tag:yaml.org,2002:value";
pub const SEQ: &str = "tag:yaml.org,2002:seq";
pub const MAP: &str = "tag:yaml.org,2002:map";
pub const SET: &str = "tag:yaml.org,2002:set";
pub const OMAP: &str = "tag:yaml.org,2002:omap";
pub const PAIRS: &str = "tag:yaml.org,2002:pairs";

struct Resolvers {
    bool_: Regex,
    float: Regex,
    int: Regex,
    merge: Regex,
    null: Regex,
    timestamp: Regex,
    value: Regex,
    construct_timestamp: Regex,
}

fn resolvers() -> &'static Resolvers {
    static R: OnceLock<Resolvers> = OnceLock::new();
    R.get_or_init(|| {
        let re = |s: &str| Regex::new(s).expect("resolver regexes are valid");
        Resolvers {
            bool_: re(r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$"),
            float: re(concat!(
                r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?",
                r"|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?",
                r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
                r"|[-+]?\.(?:inf|Inf|INF)",
                r"|\.(?:nan|NaN|NAN))$"
            )),
            int: re(concat!(
                r"^(?:[-+]?0b[0-1_]+",
                r"|[-+]?0[0-7_]+",
                r"|[-+]?(?:0|[1-9][0-9_]*)",
                r"|[-+]?0x[0-9a-fA-F_]+",
                r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$"
            )),
            merge: re(r"^(?:<<)$"),
            null: re(r"^(?:~|null|Null|NULL|)$"),
            timestamp: re(concat!(
                r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]",
                r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?",
                r"(?:[Tt]|[ \t]+)[0-9][0-9]?",
                r":[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?",
                r"(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$"
            )),
            value: re(r"^(?:=)$"),
            construct_timestamp: re(concat!(
                r"^(?P<year>[0-9][0-9][0-9][0-9])-(?P<month>[0-9][0-9]?)-(?P<day>[0-9][0-9]?)",
                r"(?:(?:[Tt]|[ \t]+)(?P<hour>[0-9][0-9]?):(?P<minute>[0-9][0-9]):(?P<second>[0-9][0-9])",
                r"(?:\.(?P<fraction>[0-9]*))?",
                r"(?:[ \t]*(?P<tz>Z|(?P<tz_sign>[-+])(?P<tz_hour>[0-9][0-9]?)(?::(?P<tz_minute>[0-9][0-9]))?))?)?$"
            )),
        }
    })
}

/// Python's `re.match(r'...$', s)`: `$` also matches before one final newline.
fn py_match(re: &Regex, value: &str) -> bool {
    re.is_match(value) || value.strip_suffix('\n').is_some_and(|v| re.is_match(v))
}

/// The tag PyYAML's Resolver gives a scalar whose tag is implicit (a plain scalar, or `!`).
pub fn implicit(value: &str) -> &'static str {
    let r = resolvers();
    let Some(first) = value.chars().next() else {
        return NULL;
    };
    // Registration order in resolver.py: bool, float, int, merge, null, timestamp, value; each
    // regex is tried only for the first characters it was registered with.
    let tries: [(&str, &Regex, &str); 7] = [
        (BOOL, &r.bool_, "yYnNtTfFoO"),
        (FLOAT, &r.float, "-+0123456789."),
        (INT, &r.int, "-+0123456789"),
        (MERGE, &r.merge, "<"),
        (NULL, &r.null, "~nN"),
        (TIMESTAMP, &r.timestamp, "0123456789"),
        (VALUE, &r.value, "="),
    ];
    for (tag, re, firsts) in tries {
        if firsts.contains(first) && py_match(re, value) {
            return tag;
        }
    }
    STR
}

/// Tags a scalar may carry in `safe_load`.
pub fn is_scalar_tag(tag: &str) -> bool {
    matches!(tag, STR | INT | FLOAT | BOOL | NULL | BINARY | TIMESTAMP)
}

/// Whether a plain scalar with this text resolves to `tag` (the emitter writes it plain only then).
pub fn plain_keeps(value: &str, tag: &str) -> bool {
    implicit(value) == tag
}

/// `construct_yaml_bool`: the bool `safe_load` builds from a scalar's text, `None` where it
/// raises (KeyError).
pub fn construct_bool(value: &str) -> Option<bool> {
    match value.to_lowercase().as_str() {
        "yes" | "true" | "on" => Some(true),
        "no" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// Why SafeConstructor would fail to build a scalar of `tag` from `value`, if it would.
pub fn construct_error(tag: &str, value: &str) -> Option<String> {
    let ok = match tag {
        INT => construct_int(value).is_some(),
        FLOAT => construct_float(value).is_some(),
        BOOL => construct_bool(value).is_some(),
        TIMESTAMP => timestamp_ok(value),
        BINARY => binary_ok(value),
        _ => true,
    };
    (!ok).then(|| {
        format!(
            "{:?} is not a valid !!{}",
            value,
            tag.strip_prefix(YAML).unwrap_or(tag)
        )
    })
}

fn timestamp_ok(value: &str) -> bool {
    let re = &resolvers().construct_timestamp;
    let caps = match re.captures(value) {
        Some(c) => c,
        None => match value.strip_suffix('\n').and_then(|v| re.captures(v)) {
            Some(c) => c,
            None => return false,
        },
    };
    let num = |name: &str| -> u32 {
        caps.name(name)
            .and_then(|m| m.as_str().parse().ok())
            .unwrap_or(0)
    };
    let (year, month, day) = (num("year"), num("month"), num("day"));
    if year == 0 || !(1..=12).contains(&month) {
        return false;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if day == 0 || day > days[month as usize - 1] {
        return false;
    }
    if caps.name("hour").is_none() {
        return true;
    }
    if num("hour") > 23 || num("minute") > 59 || num("second") > 59 {
        return false;
    }
    // datetime.timezone needs an offset strictly inside one day.
    caps.name("tz_sign").is_none() || num("tz_hour") * 60 + num("tz_minute") < 24 * 60
}

/// `base64.decodebytes` in its lenient mode: other characters are skipped, padding must fit.
fn binary_ok(value: &str) -> bool {
    if !value.is_ascii() {
        return false;
    }
    let mut data = 0usize;
    let mut pads = 0usize;
    for c in value.chars() {
        if c.is_ascii_alphanumeric() || c == '+' || c == '/' {
            if pads > 0 {
                // Data after complete padding ends the quantum in lenient mode only when
                // the padding completed it; keep counting, as binascii does.
                pads = 0;
            }
            data += 1;
        } else if c == '=' {
            let need = match data % 4 {
                2 => 2,
                3 => 1,
                _ => usize::MAX,
            };
            pads += 1;
            if pads >= need {
                data += 4 - data % 4;
                pads = 0;
            }
        }
    }
    data % 4 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_scalars_resolve_as_yaml_1_1() {
        for (v, t) in [
            ("yes", BOOL),
            ("Off", BOOL),
            ("y", STR),
            ("1e-5", STR),
            ("1.0e+5", FLOAT),
            ("017", INT),
            ("1:30", INT),
            ("1:30.5", FLOAT),
            ("0b101", INT),
            ("1_000", INT),
            (".inf", FLOAT),
            ("~", NULL),
            ("", NULL),
            ("2001-12-14", TIMESTAMP),
            ("2001-12-14 21:59:43.10 -5", TIMESTAMP),
            ("<<", MERGE),
            ("=", VALUE),
            ("08", STR),
            ("0x1F", INT),
            (".", STR),
        ] {
            assert_eq!(implicit(v), t, "{v:?}");
        }
    }

    #[test]
    fn constructor_failures_are_caught() {
        assert!(construct_error(INT, "abc").is_some());
        assert!(construct_error(INT, "0b").is_some());
        assert!(construct_error(INT, "0o17").is_none());
        assert!(construct_error(FLOAT, "1e5").is_none());
        assert!(construct_error(FLOAT, "x").is_some());
        assert!(construct_error(BOOL, "maybe").is_some());
        assert!(construct_error(TIMESTAMP, "2001-02-29").is_some());
        assert!(construct_error(TIMESTAMP, "2000-02-29").is_none());
        assert!(construct_error(BINARY, "aGVsbG8=").is_none());
        assert!(construct_error(BINARY, "aGVsbG8").is_some());
    }
}
