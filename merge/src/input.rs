//! Where the records come from: each INPUT is a record file, or a SCRATCH folder whose plan
//! names one record file per shard. Reading one either yields its `{kernel: {key: config}}`
//! buckets or says why it was skipped, so that a dead shard is reported, not silently dropped.

use anyhow::{bail, Result};
use protocol::layout::{Scratch, PLAN};
use protocol::plan::Plan;
use protocol::pyjson::{self, Outline, Span, Value};
use std::path::{Path, PathBuf};

/// One record file to read, in merge order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub path: PathBuf,
    /// The shard it belongs to when it came from a SCRATCH folder.
    pub shard: Option<usize>,
    /// Where to look when the shard left no usable record: its log and status files.
    pub clues: Option<(PathBuf, PathBuf)>,
}

/// Expands the command line's INPUTs into record files, in order.
///
/// `op` is the op given with `--op` (or the environment); a SCRATCH folder's plan supplies it
/// otherwise, and disagreeing with the plan is an error: the records would be the wrong op's.
pub fn sources(inputs: &[PathBuf], op: Option<&str>) -> Result<Vec<Source>> {
    let mut out = Vec::new();
    for input in inputs {
        let plan_path = input.join(PLAN);
        if !input.is_dir() || !plan_path.exists() {
            out.push(Source {
                path: input.clone(),
                shard: None,
                clues: None,
            });
            continue;
        }
        let (plan, scratch) = Plan::load(&plan_path)?;
        let op = match op {
            Some(op) if op != plan.op => bail!(
                "{}: the plan is for op {:?}, not {op:?}; drop --op (and FLAGGEMS_PERF_CURRENT_OP) \
                 or give the matching op",
                plan_path.display(),
                plan.op
            ),
            _ => plan.op.as_str(),
        };
        out.extend(
            plan.shards
                .iter()
                .map(|shard| shard_source(&scratch, shard.index, op)),
        );
    }
    Ok(out)
}

fn shard_source(scratch: &Scratch, shard: usize, op: &str) -> Source {
    Source {
        path: scratch.record_file(shard, op),
        shard: Some(shard),
        clues: Some((scratch.log(shard), scratch.status(shard))),
    }
}

/// A record file's buckets, in file order, with the kernels whose bucket was not an object
/// (kernel name and what it held instead).
///
/// Kernel names, keys and configs are kept as the text `json.dumps(merged, indent=2,
/// ensure_ascii=False)` writes for them, in `text`: the merge compares and copies that text,
/// and parses a config again only to list it as a conflict, or when texts that differ might
/// still be equal values (keys in another order).
#[derive(Debug)]
pub struct Record {
    pub text: String,
    /// (kernel, [(key, config)]) as spans of `text`.
    pub buckets: Vec<(Span, Vec<(Span, Span)>)>,
    pub bad_buckets: Vec<(String, &'static str)>,
}

/// Reads one record file the way the plugin's `json.loads(p.read_text())` did; `Err` is the
/// reason it cannot be used, without the path (the caller names it).
pub fn read(path: &Path) -> std::result::Result<Record, String> {
    if path.is_dir() {
        return Err(format!(
            "is a folder without {PLAN}: give a record file <op>.json or a SCRATCH folder"
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.is_empty() {
        return Err("empty file: its writer never wrote it or died first".into());
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (bad byte at offset {}): not a record file",
            e.utf8_error().valid_up_to()
        )
    })?;
    // The indented output is a little longer than compact input; reserve for it once.
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let outline = pyjson::loads_outline(&text, 2, &mut out).map_err(|e| {
        format!(
            "{e} (torn or not JSON){}",
            if text.ends_with(['}', '\n']) {
                ""
            } else {
                ", it may have been cut off mid-write"
            }
        )
    })?;
    let Outline::Object(entries) = outline else {
        let kind = match outline {
            Outline::Other(kind) => kind,
            // Depth 2 keeps the top level as an object or its kind, never as text.
            Outline::Object(_) | Outline::Text(_) => "a value",
        };
        return Err(format!(
            "top level is {kind}, not an object {{kernel: {{key: config}}}}"
        ));
    };
    let mut record = Record {
        text: String::new(),
        buckets: Vec::with_capacity(entries.len()),
        bad_buckets: Vec::new(),
    };
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
                record.buckets.push((kernel, keys));
            }
            Outline::Other(kind) => record.bad_buckets.push((name(&out[kernel]), kind)),
            Outline::Text(_) => {}
        }
    }
    record.text = out;
    Ok(record)
}

/// A kernel name or key back from its JSON text.
pub fn name(text: &str) -> String {
    match pyjson::loads(text) {
        Ok(Value::Str(name)) => name,
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_file_is_one_source_without_a_shard() {
        let got = sources(&[PathBuf::from("a.json")], Some("mm")).expect("sources");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].shard, None);
    }

    #[test]
    fn torn_json_names_line_and_column() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mm.json");
        std::fs::write(&path, "{\n  \"k\": {\n    \"a\": [1,").expect("write");
        let err = read(&path).expect_err("torn");
        assert!(err.starts_with("3:"), "{err}");
        assert!(err.contains("cut off"), "{err}");
    }

    #[test]
    fn a_bucket_that_is_not_an_object_is_set_aside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mm.json");
        std::fs::write(&path, r#"{"k": [1], "j": {"a": 1}}"#).expect("write");
        let record = read(&path).expect("readable");
        assert_eq!(record.bad_buckets, vec![("k".to_owned(), "an array")]);
        assert_eq!(record.buckets.len(), 1);
    }
}
