//! The first-wins union of the shards' `{kernel: {key: config}}` maps, as the plugin's `_merge`
//! built it: kernels and keys in first-seen order, the first value of a key wins (warmup-publish's
//! union, `publish::last_wins`, is the other way round). Unlike the plugin, every
//! key whose later values differ (by Python's `==`) is kept as a conflict with all its values,
//! so one can see how far parallel interference moved the sweep. Both outputs, the merged
//! records and the conflicts list, are written from here, straight from the inputs' texts,
//! which the union borrows from their owner for as long as it lives.

use crate::input::Source;
use protocol::records::Records;
use rustc_hash::{FxHashMap, FxHasher};
use std::collections::hash_map::Entry;
use std::hash::{Hash, Hasher};
use std::io::{self, Write};

/// Where a value came from: the input's index in merge order.
pub type Origin = usize;

/// A key that got different winners: the kept config and every later config unequal to it,
/// as their `json.dumps` text.
#[derive(Debug, Clone)]
pub struct Conflict<'a> {
    pub kernel: &'a str,
    pub key: &'a str,
    pub kept: (Origin, &'a str),
    pub differing: Vec<(Origin, &'a str)>,
}

/// A key's text with its hash, computed once: a growing map rehashes its keys, and that
/// should not mean reading every key's text again.
#[derive(Debug, Clone, Copy)]
struct Key<'a> {
    hash: u64,
    text: &'a str,
}

impl<'a> Key<'a> {
    fn new(text: &'a str) -> Self {
        let mut hasher = FxHasher::default();
        hasher.write(text.as_bytes());
        Key {
            hash: hasher.finish(),
            text,
        }
    }
}

impl PartialEq for Key<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.text == other.text
    }
}

impl Eq for Key<'_> {}

impl Hash for Key<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// One kernel's keys.
#[derive(Debug, Default)]
struct Bucket<'a> {
    /// (key, config, origin) in first-seen order.
    keys: Vec<(&'a str, &'a str, Origin)>,
    index: FxHashMap<Key<'a>, usize>,
}

/// The merge in progress: a key's first value is kept, later unequal ones become its conflict.
#[derive(Debug, Default)]
pub struct FirstWins<'a> {
    /// How many inputs the merge has, to size the maps.
    inputs: usize,
    kernels: Vec<(&'a str, Bucket<'a>)>,
    index: FxHashMap<&'a str, usize>,
    conflicts: Vec<Conflict<'a>>,
    /// (kernel position, key position) -> position in `conflicts`.
    conflict_index: FxHashMap<(usize, usize), usize>,
}

impl<'a> FirstWins<'a> {
    /// A merge of `inputs` inputs (a hint for sizing, not a limit).
    pub fn new(inputs: usize) -> Self {
        FirstWins {
            inputs,
            ..FirstWins::default()
        }
    }

    /// Adds one input's bucket for `kernel`; an empty bucket still creates the kernel.
    ///
    /// Kernel, keys and configs are the text `json.dumps(merged, indent=2, ensure_ascii=False)`
    /// writes for them (configs as nested under kernel and key), as
    /// [`protocol::records::Records`] holds them: a string has one such text, so keys compare as
    /// text, and equal configs mostly have equal texts.
    pub fn add(
        &mut self,
        origin: Origin,
        kernel: &'a str,
        keys: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    ) {
        let k = *self.index.entry(kernel).or_insert_with(|| {
            self.kernels.push((kernel, Bucket::default()));
            self.kernels.len() - 1
        });
        let (_, bucket) = &mut self.kernels[k];
        // Growing a map of 100,000 keys step by step rehashes it over and over. When short,
        // reserve for this many keys again from every input still to come: an estimate that
        // is exact for shards of one sweep, and never more than the inputs' keys.
        let n = keys.len();
        if bucket.index.capacity() < bucket.keys.len() + n {
            let more = n * self.inputs.saturating_sub(origin).max(1);
            bucket.index.reserve(more);
            bucket.keys.reserve(more);
        }
        for (key, config) in keys {
            let i = match bucket.index.entry(Key::new(key)) {
                Entry::Vacant(slot) => {
                    slot.insert(bucket.keys.len());
                    bucket.keys.push((key, config, origin));
                    continue;
                }
                Entry::Occupied(slot) => *slot.get(),
            };
            let (_, kept, kept_origin) = bucket.keys[i];
            if pyjson::text_eq(kept, config) {
                continue;
            }
            match self.conflict_index.entry((k, i)) {
                Entry::Occupied(c) => self.conflicts[*c.get()].differing.push((origin, config)),
                Entry::Vacant(slot) => {
                    slot.insert(self.conflicts.len());
                    self.conflicts.push(Conflict {
                        kernel,
                        key,
                        kept: (kept_origin, kept),
                        differing: vec![(origin, config)],
                    });
                }
            }
        }
    }

    /// Adds every good bucket of one input's record file.
    pub fn add_records(&mut self, origin: Origin, records: &'a Records) {
        self.add_records_except(origin, records, &[]);
    }

    /// As [`FirstWins::add_records`], leaving out the kernels `skip` names (JSON texts, quotes
    /// included).
    pub fn add_records_except(&mut self, origin: Origin, records: &'a Records, skip: &[String]) {
        let text = records.text.as_str();
        for (kernel, keys) in &records.buckets {
            if skip.iter().any(|s| *s == text[kernel.clone()]) {
                continue;
            }
            self.add(
                origin,
                &text[kernel.clone()],
                keys.iter()
                    .map(|(key, config)| (&text[key.clone()], &text[config.clone()])),
            );
        }
    }

    pub fn kernels(&self) -> usize {
        self.kernels.len()
    }

    pub fn configs(&self) -> usize {
        self.kernels
            .iter()
            .map(|(_, bucket)| bucket.keys.len())
            .sum()
    }

    pub fn conflicts(&self) -> &[Conflict<'a>] {
        &self.conflicts
    }

    /// The merged records' `json.dumps(merged, indent=2, ensure_ascii=False) + "\n"`, written
    /// straight from the kept texts, a megabyte at a time.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        const CHUNK: usize = 1 << 20;
        let mut buf = Vec::with_capacity(CHUNK + 4096);
        let mut flush = |buf: &mut Vec<u8>, min: usize| -> io::Result<()> {
            if buf.len() >= min {
                out.write_all(buf)?;
                buf.clear();
            }
            Ok(())
        };
        let mut sep: &[u8] = b"{\n  ";
        for (kernel, bucket) in &self.kernels {
            buf.extend_from_slice(sep);
            sep = b",\n  ";
            buf.extend_from_slice(kernel.as_bytes());
            if bucket.keys.is_empty() {
                buf.extend_from_slice(b": {}");
                continue;
            }
            let mut key_sep: &[u8] = b": {\n    ";
            for (key, config, _) in &bucket.keys {
                buf.extend_from_slice(key_sep);
                key_sep = b",\n    ";
                buf.extend_from_slice(key.as_bytes());
                buf.extend_from_slice(b": ");
                buf.extend_from_slice(config.as_bytes());
                flush(&mut buf, CHUNK)?;
            }
            buf.extend_from_slice(b"\n  }");
        }
        buf.extend_from_slice(if self.kernels.is_empty() {
            b"{}\n"
        } else {
            b"\n}\n"
        });
        flush(&mut buf, 0)
    }

    /// The conflicts list, one object per conflicting key, as `json.dumps(conflicts, indent=2,
    /// ensure_ascii=False) + "\n"` writes it; `sources[origin]` says where each value came from.
    ///
    /// A config's text is its `dumps` under kernel and key; here it sits one level deeper
    /// (`kept.value`) or two (`differing[i].value`), and as `dumps` never leaves a raw newline
    /// inside a string, going deeper only means indenting its lines further.
    pub fn write_conflicts(&self, out: &mut dyn Write, sources: &[Source]) -> io::Result<()> {
        if self.conflicts.is_empty() {
            return out.write_all(b"[]\n");
        }
        // `{input, shard, value}` closing at indent 2 * depth.
        let origin = |out: &mut dyn Write, depth: usize, from: Origin, config: &str| {
            let source = &sources[from];
            let pad = "  ".repeat(depth + 1);
            let shard = source
                .shard
                .map_or_else(|| "null".to_owned(), |s| s.to_string());
            let input = pyjson::PyStr::new(&source.path.to_string_lossy());
            let value = config.replace('\n', &format!("\n{}", "  ".repeat(depth - 1)));
            write!(
                out,
                "{{\n{pad}\"input\": {input},\n{pad}\"shard\": {shard},\n{pad}\"value\": {value}\n{}}}",
                "  ".repeat(depth)
            )
        };
        for (n, c) in self.conflicts.iter().enumerate() {
            out.write_all(if n == 0 { b"[\n  {\n" } else { b",\n  {\n" })?;
            write!(
                out,
                "    \"kernel\": {},\n    \"key\": {},\n    \"kept\": ",
                c.kernel, c.key
            )?;
            origin(out, 2, c.kept.0, c.kept.1)?;
            out.write_all(b",\n    \"differing\": [")?;
            for (m, (from, config)) in c.differing.iter().enumerate() {
                out.write_all(if m == 0 { b"\n      " } else { b",\n      " })?;
                origin(out, 3, *from, config)?;
            }
            out.write_all(b"\n    ]\n  }")?;
        }
        out.write_all(b"\n]\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each input's record file `{"k": BUCKET}`, for a union to borrow.
    fn records(buckets: &[&str]) -> Vec<Records> {
        buckets
            .iter()
            .map(|b| Records::parse(format!("{{\"k\": {b}}}").as_bytes()).expect("valid"))
            .collect()
    }

    fn first_wins(records: &[Records]) -> FirstWins<'_> {
        let mut u = FirstWins::new(records.len());
        for (origin, r) in records.iter().enumerate() {
            u.add_records(origin, r);
        }
        u
    }

    fn written(u: &FirstWins) -> String {
        let mut out = Vec::new();
        u.write(&mut out).expect("write to memory");
        String::from_utf8(out).expect("UTF-8")
    }

    fn conflicting<'a>(u: &FirstWins<'a>) -> Vec<&'a str> {
        u.conflicts().iter().map(|c| c.key).collect()
    }

    #[test]
    fn conflicting_keys_keep_first_shard_value() {
        let r = records(&[
            r#"{"a": 1, "b": 2}"#,
            r#"{"a": 1.0, "b": 3, "c": 4}"#,
            r#"{"b": 2, "c": 5}"#,
            r#"{"b": 7}"#,
        ]);
        let u = first_wins(&r);
        assert_eq!((u.kernels(), u.configs()), (1, 3));
        let c: Vec<_> = u
            .conflicts()
            .iter()
            .map(|c| {
                (
                    c.key,
                    c.kept.0,
                    c.differing.iter().map(|d| d.0).collect::<Vec<_>>(),
                )
            })
            .collect();
        assert_eq!(c, vec![("\"b\"", 0, vec![1, 3]), ("\"c\"", 1, vec![2])]);
        assert_eq!(
            written(&u),
            "{\n  \"k\": {\n    \"a\": 1,\n    \"b\": 2,\n    \"c\": 4\n  }\n}\n"
        );
    }

    #[test]
    fn a_top_level_nan_conflicts_but_a_nested_one_does_not() {
        let both = r#"{"a": NaN, "b": [NaN], "c": {"x": NaN}}"#;
        let r = records(&[both, both]);
        assert_eq!(conflicting(&first_wins(&r)), ["\"a\""]);
    }

    #[test]
    fn equal_values_written_differently_do_not_conflict() {
        let r = records(&[
            r#"{"a": 0, "b": {"x": 1, "y": [true]}, "c": 1e2}"#,
            r#"{"a": -0.0, "b": {"y": [1.0], "x": 1}, "c": 100}"#,
            r#"{"a": 0.5, "b": {"y": [2], "x": 1}, "c": "100"}"#,
        ]);
        assert_eq!(conflicting(&first_wins(&r[..2])), Vec::<&str>::new());
        assert_eq!(conflicting(&first_wins(&r)), ["\"a\"", "\"b\"", "\"c\""]);
    }

    #[test]
    fn empty_buckets_still_create_their_kernel() {
        let mut u = FirstWins::default();
        u.add(0, "\"e\"", std::iter::empty());
        assert_eq!((u.kernels(), u.configs()), (1, 0));
        assert_eq!(written(&u), "{\n  \"e\": {}\n}\n");
    }

    #[test]
    fn output_is_what_python_dumps_writes() {
        let r = records(&[r#"{"é\n": {"b": [1, {"c": []}], "a": 1e-05}, "\ud800": 1}"#]);
        let mut u = first_wins(&r);
        u.add(1, "\"z\"", std::iter::empty());
        let tree = pyjson::loads(
            r#"{"k": {"é\n": {"b": [1, {"c": []}], "a": 1e-05}, "\ud800": 1}, "z": {}}"#,
        )
        .expect("valid JSON");
        assert_eq!(written(&u), pyjson::dumps(&tree));
    }

    #[test]
    fn the_conflicts_list_names_each_value_and_where_it_came_from() {
        let r = records(&[r#"{"a": [1]}"#, r#"{"a": [2]}"#]);
        let u = first_wins(&r);
        let sources: Vec<Source> = ["x.json", "y \"q\".json"]
            .iter()
            .map(|p| Source {
                path: p.into(),
                shard: None,
                clues: None,
                by_key: false,
            })
            .collect();
        let mut out = Vec::new();
        u.write_conflicts(&mut out, &sources).expect("to memory");
        let want = r#"[
  {
    "kernel": "k",
    "key": "a",
    "kept": {
      "input": "x.json",
      "shard": null,
      "value": [
        1
      ]
    },
    "differing": [
      {
        "input": "y \"q\".json",
        "shard": null,
        "value": [
          2
        ]
      }
    ]
  }
]
"#;
        assert_eq!(String::from_utf8_lossy(&out), want);
    }
}
