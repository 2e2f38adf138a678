//! MERGED must be a record file `{kernel: {key: config}}` as Python's `json` reads it before it
//! may replace the harness's record: a torn or wrongly shaped file would make the replay run
//! fail, or silently sweep again, far from the step that broke it.

use anyhow::{bail, Context, Result};
use protocol::pyjson::{self, Value};
use std::io::Read;
use std::path::Path;

/// A checked record file: its bytes as given, and what it holds.
#[derive(Debug)]
pub struct Merged {
    pub bytes: Vec<u8>,
    pub kernels: usize,
    pub configs: usize,
}

/// Reads MERGED (`-` is stdin) and checks its shape; the error names the file and position.
pub fn read(path: &Path) -> Result<Merged> {
    let (name, bytes) = if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .context("reading MERGED from stdin")?;
        ("<stdin>".to_owned(), bytes)
    } else {
        let name = path.display().to_string();
        if path.is_dir() {
            bail!("{name}: is a folder; give the merged record file warmup-merge wrote");
        }
        let bytes = std::fs::read(path).with_context(|| {
            format!("reading {name} (give the file warmup-merge wrote, or the SCRATCH folder it merged into with --in-scratch)")
        })?;
        (name, bytes)
    };
    let (kernels, configs) = check(&bytes).map_err(|why| anyhow::anyhow!("{name}{why}"))?;
    Ok(Merged {
        bytes,
        kernels,
        configs,
    })
}

/// Counts kernels and configs, or says (starting with `:` or `: `) what is wrong.
fn check(bytes: &[u8]) -> std::result::Result<(usize, usize), String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        format!(
            ": not UTF-8 text (bad byte at offset {}); give the file warmup-merge wrote",
            e.valid_up_to()
        )
    })?;
    let value = pyjson::loads(text)
        .map_err(|e| format!(":{e}; not a JSON record file, rerun warmup-merge"))?;
    let Value::Object(buckets) = &value else {
        return Err(format!(
            ": top level is {}, not an object {{kernel: {{key: config}}}}",
            value.kind()
        ));
    };
    for (kernel, bucket) in buckets {
        if !matches!(bucket, Value::Object(_)) {
            return Err(format!(
                ": kernel {kernel:?} holds {}, not an object {{key: config}}",
                bucket.kind()
            ));
        }
    }
    Ok((buckets.len(), pyjson::count_configs(&value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_file_is_counted() {
        assert_eq!(check(br#"{"k": {"a": 1, "b": 2}, "e": {}}"#), Ok((2, 2)));
    }

    #[test]
    fn wrong_shapes_are_named() {
        let why = check(br#"{"k": [1]}"#).expect_err("bucket");
        assert!(why.contains("\"k\" holds an array"), "{why}");
        let why = check(b"[]").expect_err("top");
        assert!(why.contains("top level is an array"), "{why}");
        let why = check(b"{\n\"k\": ").expect_err("torn");
        assert!(why.starts_with(":2:6: "), "{why}");
        assert!(check(b"\xff\xfe").is_err());
    }
}
