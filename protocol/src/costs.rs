//! The cost file: `{"<op>": {"<shape text>": seconds, ...}, ...}`, what one run learned of each
//! shape's sweep cost, written by `warmup-costs` and read by `warmup-shard --costs`: here, so
//! that neither tool depends on the other. docs/CONTRACT.md ("File formats", the cost file) is
//! the format's description.
//!
//! Checked whole on load, so that a bad file is refused before anything is written, with the
//! place it is wrong at: a JSON error's line and column, else the op and shape.
//!
//! What the costs assume: a shard costs the sum of its shapes' costs. Compiling no longer breaks
//! that: the children share one Triton cache and compile each key's configs once between them
//! (`--cache-per-child` restores one compile per child), so a kernel is compiled by the first
//! child that needs it, whichever shard that is. Sweeping still can: a kernel keyed coarser than
//! the shape is swept once per child, by whichever of the child's shapes comes first, so a shape
//! costs more in a shard of its own than among shapes that share its kernels. Costs measured one
//! shape per shard (`--shards` at least the number of shapes) are exact and include every shared
//! sweep; costs split from shards of several shapes are right in sum and spread as the plan
//! expected them. A benchmark that runs all of a child's shapes in one test (FlagGems' do) gives
//! nothing finer than the child's wall time, which is why a child's time is the unit warmup-costs
//! reads; `--startup` should be what the child spends before its first sweep (interpreter,
//! imports, device set-up).

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The largest cost a cost file holds, in seconds (about 31,700 years): a larger one is refused
/// on reading and saturated on learning, so that any plan's sums of costs stay finite numbers.
pub const MAX_SECONDS: f64 = 1e12;

/// A command-line cost (`warmup-shard --overhead`): a number from 0 to [`MAX_SECONDS`], as a
/// cost file holds, so that sums of costs stay finite: clap's `value_parser`.
pub fn cost_arg(text: &str) -> std::result::Result<f64, String> {
    match toolkit::cli::non_negative(text) {
        Ok(n) if n <= MAX_SECONDS => Ok(n),
        _ => Err(format!("{text:?}: give a number from 0 to {MAX_SECONDS:e}")),
    }
}

/// A checked cost file, in its own order; new ops and shapes go at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct CostFile {
    /// The path as given, for messages.
    path: PathBuf,
    /// Where [`CostFile::save`] writes: `path`, or the file a symlink at `path` leads to.
    target: PathBuf,
    ops: Map<String, Value>,
}

/// The file `path` names once every symlink is followed (the path itself when it is no
/// symlink), whether or not that file exists yet: a cost file that is a link is written
/// through to its target, in the target's folder, and the link is kept.
pub fn target_of(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        match at.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&at)
                    .with_context(|| format!("reading the symlink {}", at.display()))?;
                at = match at.parent() {
                    Some(folder) if link.is_relative() => folder.join(link),
                    _ => link,
                };
            }
            _ => return Ok(at),
        }
    }
    bail!(
        "cost file {}: too many levels of symlinks; point it at a file",
        path.display()
    )
}

/// How a cost file's errors end: what to do about them.
const FIX: &str = "fix it, or remove it and let warmup-costs write it again";

impl CostFile {
    /// Reads and checks the cost file at `path`.
    pub fn load(path: &Path) -> Result<CostFile> {
        let name = path.display();
        if path.is_dir() {
            bail!("cost file {name}: is a directory: give a JSON file");
        }
        let text = toolkit::file::read_to_string(path).with_context(|| {
            format!("reading cost file {name} (check the path; warmup-costs writes one)")
        })?;
        let mut file = Self::parse(path, &text)?;
        file.target = target_of(path)?;
        Ok(file)
    }

    /// [`load`](Self::load), or an empty cost file when nothing is at `path` yet.
    pub fn load_or_new(path: &Path) -> Result<CostFile> {
        if path.symlink_metadata().is_err() {
            return Ok(CostFile {
                path: path.to_path_buf(),
                target: path.to_path_buf(),
                ops: Map::new(),
            });
        }
        if path.exists() {
            return Self::load(path);
        }
        // A symlink to a file not there yet: written through to where it points.
        Ok(CostFile {
            path: path.to_path_buf(),
            target: target_of(path)?,
            ops: Map::new(),
        })
    }

    /// Checks `text` as the cost file at `path`.
    pub fn parse(path: &Path, text: &str) -> Result<CostFile> {
        let name = path.display();
        let value: Value = serde_json::from_str(text).map_err(|e| {
            let what = e.to_string();
            let what = what
                .rsplit_once(" at line ")
                .map_or(what.as_str(), |(w, _)| w);
            anyhow::anyhow!(
                "{name}:{}:{}: not a JSON cost file ({what}): {FIX}",
                e.line(),
                e.column()
            )
        })?;
        let Value::Object(ops) = value else {
            bail!(
                "{name}: the top level is {}, not an object of ops ({{\"<op>\": {{\"<shape text>\": seconds}}}}): {FIX}",
                kind(&value)
            );
        };
        for (op, shapes) in &ops {
            let Value::Object(shapes) = shapes else {
                bail!(
                    "{name}: op {op:?} holds {}, not an object of shape costs ({{\"<shape text>\": seconds}}): {FIX}",
                    kind(shapes)
                );
            };
            for (shape, cost) in shapes {
                if !cost
                    .as_f64()
                    .is_some_and(|c| (0.0..=MAX_SECONDS).contains(&c))
                {
                    bail!(
                        "{name}: op {op:?}, shape {shape}: {cost} is not a cost: give seconds as a number from 0 to {MAX_SECONDS:e}; {FIX}"
                    );
                }
            }
        }
        Ok(CostFile {
            path: path.to_path_buf(),
            target: path.to_path_buf(),
            ops,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The op's costs by shape text; empty when the file has none for it.
    pub fn costs(&self, op: &str) -> HashMap<&str, f64> {
        match self.ops.get(op) {
            Some(Value::Object(shapes)) => shapes
                .iter()
                .filter_map(|(text, cost)| Some((text.as_str(), cost.as_f64()?)))
                .collect(),
            _ => HashMap::new(),
        }
    }

    /// Sets one shape's cost, rounded to the millisecond and held to 0 to [`MAX_SECONDS`] (the
    /// caller says when it saturates one); returns whether it is new to the file.
    pub fn set(&mut self, op: &str, shape: &str, seconds: f64) -> bool {
        let held = if seconds.is_nan() {
            0.0
        } else {
            seconds.clamp(0.0, MAX_SECONDS)
        };
        let rounded = (held * 1000.0).round() / 1000.0;
        if !matches!(self.ops.get(op), Some(Value::Object(_))) {
            self.ops.insert(op.to_owned(), Value::Object(Map::new()));
        }
        let Some(Value::Object(shapes)) = self.ops.get_mut(op) else {
            return false;
        };
        let number = serde_json::Number::from_f64(rounded).unwrap_or_else(|| 0.into());
        shapes
            .insert(shape.to_owned(), Value::Number(number))
            .is_none()
    }

    /// Forgets every cost of `op` (a sweep's costs replacing the op's earlier ones); returns
    /// whether it had any.
    pub fn clear(&mut self, op: &str) -> bool {
        self.ops.shift_remove(op).is_some()
    }

    /// Whether the file holds no op at all.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Where [`save`](Self::save) writes: the file itself, a symlink's target for a link.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Writes the file atomically: JSON, two-space indented, a newline at the end; through a
    /// symlink to its target, in the target's folder, the link left as it is.
    pub fn save(&self) -> Result<()> {
        toolkit::atomic::write_json(&self.target, &self.ops)
    }
}

/// What kind of JSON value this is, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CostFile> {
        CostFile::parse(Path::new("costs.json"), text)
    }

    fn err(text: &str) -> String {
        format!("{:#}", parse(text).expect_err("must refuse"))
    }

    #[test]
    fn costs_are_read_by_op_and_shape_text() {
        let file = parse(r#"{"mm": {"[64,64]": 1.5, "[1,2]": 0}, "bmm": {}}"#).expect("valid");
        let mm = file.costs("mm");
        assert_eq!(mm.get("[64,64]"), Some(&1.5));
        assert_eq!(mm.get("[1,2]"), Some(&0.0));
        assert!(file.costs("bmm").is_empty() && file.costs("addmm").is_empty());
    }

    #[test]
    fn a_json_error_names_its_line_and_column() {
        let e = err("{\"mm\": {\n  \"[1]\": 1,,\n}}");
        assert!(e.starts_with("costs.json:2:"), "{e}");
        assert!(e.contains("warmup-costs"), "{e}");
    }

    #[test]
    fn wrong_shapes_name_the_op_and_shape() {
        assert!(err("[1, 2]").contains("the top level is an array"));
        assert!(err(r#"{"mm": [1]}"#).contains("op \"mm\" holds an array"));
        assert!(err(r#"{"mm": {"[1]": 1e999}}"#).starts_with("costs.json:1:"));
        for bad in ["-1", "\"3\"", "null", "true", "1e308", "1000000000001"] {
            let e = err(&format!(r#"{{"mm": {{"[1,2]": {bad}}}}}"#));
            assert!(
                e.contains("op \"mm\", shape [1,2]") && e.contains("not a cost"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn extreme_costs_are_held_to_the_range_not_learned_as_0() {
        let mut file = parse("{}").expect("valid");
        file.set("mm", "[1]", 1e306);
        file.set("mm", "[2]", -3.0);
        file.set("mm", "[3]", MAX_SECONDS);
        let text = serde_json::to_string(&file.ops).expect("json");
        assert_eq!(
            text,
            r#"{"mm":{"[1]":1000000000000.0,"[2]":0.0,"[3]":1000000000000.0}}"#
        );
        parse(&text).expect("what is written reads back");
    }

    #[test]
    fn a_symlinked_cost_file_is_written_through_to_its_target() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("shared/costs.json");
        std::fs::create_dir(dir.path().join("shared")).expect("mkdir");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("shared/costs.json", &link).expect("symlink");
        let mut file = CostFile::load_or_new(&link).expect("dangling: new");
        assert_eq!(file.target(), real);
        file.set("mm", "[1]", 1.0);
        file.save().expect("save");
        std::fs::write(&real, r#"{"mm": {"[1]": 2}}"#).expect("edit");
        let mut file = CostFile::load(&link).expect("through the link");
        assert_eq!(file.costs("mm").get("[1]"), Some(&2.0));
        file.set("bmm", "[1]", 1.0);
        file.save().expect("save");
        assert!(link.symlink_metadata().expect("link").is_symlink());
        assert!(std::fs::read_to_string(&real)
            .expect("real")
            .contains("bmm"));
    }

    #[test]
    fn set_keeps_the_order_rounds_and_says_what_is_new() {
        let mut file = parse(r#"{"mm": {"[2]": 1.0, "[1]": 2.0}}"#).expect("valid");
        assert!(!file.set("mm", "[2]", 1.23456));
        assert!(file.set("mm", "[3]", 0.5));
        assert!(file.set("bmm", "[1]", 1.0));
        let text = serde_json::to_string(&file.ops).expect("json");
        assert_eq!(
            text,
            r#"{"mm":{"[2]":1.235,"[1]":2.0,"[3]":0.5},"bmm":{"[1]":1.0}}"#
        );
    }
}
