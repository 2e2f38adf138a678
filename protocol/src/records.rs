//! Record files `{kernel: {key: config}}` (docs/CONTRACT.md, "Record files"), read as the plugin
//! read them (`json.loads(p.read_text())`): the shape check and the counts that warmup-merge and
//! warmup-publish both report, so that both name a bad file in the same words.

use pyjson::{loads_outline, Outline, Span};
use std::fmt;

/// A record file's buckets, in file order, with its kernels whose bucket is not an object.
///
/// Kernel names, keys and configs are kept as the text `json.dumps(merged, indent=2,
/// ensure_ascii=False)` writes for them (a config as nested under its kernel and key), in
/// `text`: a merge compares and copies that text, and parses a config again only where texts
/// that differ might still be equal values.
#[derive(Debug)]
pub struct Records {
    pub text: String,
    /// (kernel, [(key, config)]) as spans of `text`.
    pub buckets: Vec<(Span, Vec<(Span, Span)>)>,
    /// Kernels whose bucket is not an object: [`BadBucket`] says which and what it holds.
    pub bad_buckets: Vec<BadBucket>,
}

/// A kernel whose bucket is not an object `{key: config}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadBucket {
    /// The kernel name as JSON text, quotes included.
    pub kernel: String,
    /// What it holds instead (`an array`, `an integer`).
    pub holds: &'static str,
}

impl fmt::Display for BadBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel {} holds {}, not an object {{key: config}}",
            self.kernel, self.holds
        )
    }
}

/// Why a file is not a record file: at a line and column of it, or as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub at: Option<(usize, usize)>,
    pub reason: String,
}

impl Unreadable {
    fn whole(reason: impl Into<String>) -> Self {
        Unreadable {
            at: None,
            reason: reason.into(),
        }
    }

    /// `NAME:LINE:COL: reason`, or `NAME: reason`.
    pub fn located(&self, name: &str) -> String {
        match self.at {
            Some((line, column)) => format!("{name}:{line}:{column}: {}", self.reason),
            None => format!("{name}: {}", self.reason),
        }
    }
}

/// How much a record set holds, as every tool reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub kernels: usize,
    pub configs: usize,
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} kernel(s), {} key(s)", self.kernels, self.configs)
    }
}

impl Records {
    /// Reads a record file's bytes; `Err` says why they are not one.
    pub fn parse(bytes: &[u8]) -> Result<Records, Unreadable> {
        if bytes.is_empty() {
            return Err(Unreadable::whole(
                "empty file: its writer never wrote it or died first",
            ));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Unreadable::whole(format!(
                "not UTF-8 text (bad byte at offset {})",
                e.valid_up_to()
            ))
        })?;
        // The indented text is a little longer than compact input; reserve for it once.
        let mut out = String::with_capacity(text.len() + text.len() / 4);
        let outline = loads_outline(text, 2, &mut out).map_err(|e| Unreadable {
            at: Some((e.line, e.column)),
            reason: format!(
                "{} (torn or not JSON){}",
                e.message,
                if text.ends_with(['}', '\n']) {
                    ""
                } else {
                    ", it may have been cut off mid-write"
                }
            ),
        })?;
        let entries = match outline {
            Outline::Object(entries) => entries,
            // Depth 2 keeps the top level as an object or its kind, never as text.
            Outline::Other(kind) => return Err(not_records(kind)),
            Outline::Text(_) => return Err(not_records("a value")),
        };
        let mut buckets = Vec::with_capacity(entries.len());
        let mut bad_buckets = Vec::new();
        for (kernel, bucket) in entries {
            match bucket {
                Outline::Object(keys) => {
                    // At depth 2 every config is text.
                    let keys = keys
                        .into_iter()
                        .filter_map(|(key, config)| match config {
                            Outline::Text(config) => Some((key, config)),
                            Outline::Object(_) | Outline::Other(_) => None,
                        })
                        .collect();
                    buckets.push((kernel, keys));
                }
                Outline::Other(holds) => bad_buckets.push(BadBucket {
                    kernel: out[kernel].to_owned(),
                    holds,
                }),
                Outline::Text(_) => {}
            }
        }
        Ok(Records {
            text: out,
            buckets,
            bad_buckets,
        })
    }

    /// Kernels and configs (distinct keys) of the good buckets.
    pub fn counts(&self) -> Counts {
        Counts {
            kernels: self.buckets.len(),
            configs: self.buckets.iter().map(|(_, keys)| keys.len()).sum(),
        }
    }
}

fn not_records(kind: &str) -> Unreadable {
    Unreadable::whole(format!(
        "top level is {kind}, not an object {{kernel: {{key: config}}}}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Records, Unreadable> {
        Records::parse(text.as_bytes())
    }

    #[test]
    fn a_record_file_is_counted_and_its_texts_kept() {
        let r = parse(r#"{"k": {"a": 1, "b": [2], "a": 3}, "e": {}}"#).expect("records");
        assert_eq!(
            r.counts(),
            Counts {
                kernels: 2,
                configs: 2
            }
        );
        let (kernel, keys) = &r.buckets[0];
        assert_eq!(&r.text[kernel.clone()], "\"k\"");
        assert_eq!(&r.text[keys[0].1.clone()], "3");
        assert_eq!(&r.text[keys[1].1.clone()], "[\n      2\n    ]");
    }

    #[test]
    fn wrong_shapes_are_named() {
        let r = parse(r#"{"k": [1], "j": {"a": 1}}"#).expect("readable");
        assert_eq!(
            r.bad_buckets[0].to_string(),
            "kernel \"k\" holds an array, not an object {key: config}"
        );
        assert_eq!(r.buckets.len(), 1);
        let top = parse("[]").expect_err("top");
        assert_eq!(
            top.located("m.json"),
            "m.json: top level is an array, not an object {kernel: {key: config}}"
        );
        let torn = parse("{\n  \"k\": {\n    \"a\": [1,").expect_err("torn");
        assert!(torn.located("m.json").starts_with("m.json:3:"), "{torn:?}");
        assert!(torn.reason.contains("cut off"), "{torn:?}");
        assert!(Records::parse(b"\xff\xfe").is_err());
        assert!(parse("").expect_err("empty").reason.contains("empty file"));
    }
}
