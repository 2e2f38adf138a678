//! The record's sidecar, `<op>.meta.json` (docs/CONTRACT.md, "The record/replay harness"): the
//! versions and the device the replay checks the record against. A sidecar belongs to its record:
//! published from SCRATCH, the record gets the shards' sidecars combined into one; published from
//! a file, nothing describes the new record, and a sidecar an earlier record session left in DIR
//! would describe another one, so it goes.
//!
//! How the shards' sidecars combine, field by field: `tune_seconds` of every shard (a key in
//! several: the lowest shard's), then the journal's (its last line), then DIR's sidecar's;
//! `python`, `triton`, `torch`, `flag_gems`, `harness`, `device` where every shard agrees, else
//! `null` with a line; the longest `startup_seconds`; the sum of `compile_seconds` (`null` where a
//! shard's is no number, absent where none has it); `kernels` the union (shards disagreeing: the
//! fingerprint of those that ran the kernel if they agree, else `null`, with a line); `foreign`
//! every key made elsewhere than the published `device` and `triton` (a kept key as DIR's sidecar
//! says); `race` every shard's raced keys and `race_settings` every shard's kernels' history
//! settings (several shards: the first's).

use anyhow::Result;
use protocol::layout::Scratch;
use protocol::shard_plan::ShardPlan;
use serde_json::{Map, Value};

use protocol::history::{
    meta_path, SIDECAR_FORMAT as FORMAT, SIDECAR_READS as READS, SIDECAR_VERSION as VERSION,
};
use std::collections::HashMap;
/// Where a record was made; the replay warns on another Triton or another device.
const FIELDS: [&str; 6] = [
    "python",
    "triton",
    "torch",
    "flag_gems",
    "harness",
    "device",
];

/// What the shards' processes spent besides tuning, and how the published sidecar holds it: the
/// longest start-up (the children start side by side), the sum of compiling (each config is
/// compiled once between them).
#[derive(Clone, Copy)]
enum Fold {
    Max,
    Sum,
}
const PROCESS_SECONDS: [(&str, Fold); 2] = [
    ("startup_seconds", Fold::Max),
    ("compile_seconds", Fold::Sum),
];

/// A shard's sidecar, with its shard's number.
type ShardSidecar = (usize, Map<String, Value>);

/// The shards' sidecars as one, and what a person should know about how it was made.
#[derive(Debug, Default)]
pub struct Combined {
    /// None where no shard left a usable sidecar.
    pub sidecar: Option<Map<String, Value>>,
    pub notes: Vec<String>,
}

/// Combines the sidecars of the plan's shards (`SCRATCH/w<i>/rec/<op>.meta.json`): the
/// `tune_seconds` and `race` of every shard (a key several shards decided keeps the first shard's), their
/// `kernels` fingerprints (the union; one two shards disagree on is `null`: [`kernels`]), each
/// of FIELDS where all shards agree, else `null`, which the replay checks nothing against, and
/// PROCESS_SECONDS folded. A
/// sidecar that cannot be read or is not the harness's is left out, with a note; without a plan
/// to name the shards, none is read.
pub fn combine(scratch: &Scratch, op: &str) -> Result<Combined> {
    let plan = match ShardPlan::load(&scratch.shard_plan()) {
        Ok((plan, _)) => plan,
        Err(e) => {
            return Ok(Combined {
                sidecar: None,
                notes: vec![format!("{e:#}: the shards' sidecars are not published")],
            })
        }
    };
    let (read, mut notes) = read_shards(scratch, op, plan.shards.len());
    if read.is_empty() {
        return Ok(Combined {
            sidecar: None,
            notes,
        });
    }
    let mut out = Map::new();
    out.insert("format".into(), FORMAT.into());
    out.insert("version".into(), VERSION.into());
    out.insert("op".into(), op.into());
    out.insert(
        "tune_seconds".into(),
        Value::Object(per_key(&read, "tune_seconds")),
    );
    for field in ["race", "race_settings"] {
        let merged = per_key(&read, field);
        if !merged.is_empty() {
            out.insert(field.into(), Value::Object(merged));
        }
    }
    if let Some(kernels) = kernels(&read, &mut notes) {
        out.insert("kernels".into(), Value::Object(kernels));
    }
    agreed_fields(&mut out, &read, &mut notes);
    for (field, fold) in PROCESS_SECONDS {
        if let Some(value) = process_seconds(&read, field, fold) {
            out.insert(field.into(), value);
        }
    }
    let made = made_by_shards(&read);
    set_foreign(
        &mut out,
        made.iter()
            .map(|((k, key), m)| (k.as_str(), key.as_str(), m)),
    );
    Ok(Combined {
        sidecar: Some(out),
        notes,
    })
}

/// The sidecars of the plan's `shards` that are there and the harness's, each with its shard;
/// a note for each other one, left out.
fn read_shards(scratch: &Scratch, op: &str, shards: usize) -> (Vec<ShardSidecar>, Vec<String>) {
    let mut notes = Vec::new();
    let mut read = Vec::new();
    for shard in 0..shards {
        let path = meta_path(&scratch.record_dir(shard), op);
        let parsed = match toolkit::file::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => Err(format!("cannot be read ({e})")),
            Ok(bytes) => parse(&bytes),
        };
        match parsed {
            Ok(sidecar) => read.push((shard, sidecar)),
            Err(why) => notes.push(format!(
                "{}: {why}; left out of the published sidecar",
                path.display()
            )),
        }
    }
    (read, notes)
}

/// Each of FIELDS into `out`: the shards' value where they all agree, else `null`, which the
/// replay checks nothing against, with a note.
fn agreed_fields(out: &mut Map<String, Value>, read: &[ShardSidecar], notes: &mut Vec<String>) {
    for field in FIELDS {
        let values: Vec<(usize, &Value)> = read
            .iter()
            .map(|(shard, sidecar)| (*shard, sidecar.get(field).unwrap_or(&Value::Null)))
            .collect();
        if values.iter().all(|(_, v)| *v == values[0].1) {
            out.insert(field.into(), values[0].1.clone());
        } else {
            out.insert(field.into(), Value::Null);
            notes.push(format!(
                "the shards' sidecars disagree on {field} ({}): the published sidecar names none, \
                 so the replay checks none",
                by_value(&values)
            ));
        }
    }
}

/// Each key where its shard made it (the first shard's, as the merge keeps the first shard's
/// config): those not made as the published sidecar's own device and Triton are named so.
fn made_by_shards(read: &[ShardSidecar]) -> Vec<((String, String), Made)> {
    let mut made: Vec<((String, String), Made)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (_, sidecar) in read {
        let provenance = Provenance::of(sidecar);
        for (kernel, key) in keys_of(sidecar) {
            if seen.insert((kernel.clone(), key.clone())) {
                let at = provenance.made(&kernel, &key).clone();
                made.push(((kernel, key), at));
            }
        }
    }
    made
}

/// Where a key was made: `(device, triton)`, each a string, or null where unknown.
pub type Made = (Value, Value);

/// Where each key of a sidecar's record was made (docs/CONTRACT.md, `foreign`): the sidecar's
/// own `device` and `triton`, but for the keys its `foreign` groups name.
#[derive(Debug, Clone)]
pub struct Provenance {
    own: Made,
    foreign: HashMap<(String, String), Made>,
}

fn text_or_null(value: Option<&Value>) -> Value {
    match value {
        Some(Value::String(s)) => Value::String(s.clone()),
        _ => Value::Null,
    }
}

impl Provenance {
    /// Nothing known of where any key was made (no sidecar).
    pub fn unknown() -> Provenance {
        Provenance {
            own: (Value::Null, Value::Null),
            foreign: HashMap::new(),
        }
    }

    pub fn of(sidecar: &Map<String, Value>) -> Provenance {
        let mut foreign = HashMap::new();
        if let Some(Value::Array(groups)) = sidecar.get("foreign") {
            for group in groups {
                let Some(Value::Object(keys)) = group.get("keys") else {
                    continue;
                };
                let at = (
                    text_or_null(group.get("device")),
                    text_or_null(group.get("triton")),
                );
                for (kernel, list) in keys {
                    for key in list
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                    {
                        foreign.insert((kernel.clone(), key.to_owned()), at.clone());
                    }
                }
            }
        }
        Provenance {
            own: own(sidecar),
            foreign,
        }
    }

    pub fn made(&self, kernel: &str, key: &str) -> &Made {
        self.foreign
            .get(&(kernel.to_owned(), key.to_owned()))
            .unwrap_or(&self.own)
    }

    pub fn own(&self) -> &Made {
        &self.own
    }
}

/// A sidecar's own `(device, triton)`.
pub fn own(sidecar: &Map<String, Value>) -> Made {
    (
        text_or_null(sidecar.get("device")),
        text_or_null(sidecar.get("triton")),
    )
}

/// The keys a sidecar knows of: its `tune_seconds` and its `foreign` groups', first seen first.
fn keys_of(sidecar: &Map<String, Value>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = tune_entries(sidecar)
        .into_iter()
        .map(|(k, key, _)| (k.to_owned(), key.to_owned()))
        .collect();
    let mut foreign: Vec<(String, String)> = Provenance::of(sidecar).foreign.into_keys().collect();
    foreign.sort();
    out.extend(foreign);
    out
}

/// Sets `sidecar`'s `foreign` to the keys of `made` not made as its own `device` and `triton`,
/// grouped by where they were made in first-seen order (no field where there are none); returns
/// how many keys it names.
pub fn set_foreign<'a>(
    sidecar: &mut Map<String, Value>,
    made: impl IntoIterator<Item = (&'a str, &'a str, &'a Made)>,
) -> usize {
    let here = own(sidecar);
    let mut groups: Vec<(&Made, Map<String, Value>)> = Vec::new();
    let mut count = 0;
    for (kernel, key, at) in made {
        if *at == here {
            continue;
        }
        count += 1;
        let i = match groups.iter().position(|(m, _)| *m == at) {
            Some(i) => i,
            None => {
                groups.push((at, Map::new()));
                groups.len() - 1
            }
        };
        let keys = groups[i]
            .1
            .entry(kernel.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(keys) = keys {
            keys.push(Value::from(key));
        }
    }
    if groups.is_empty() {
        sidecar.remove("foreign");
    } else {
        let list = groups
            .into_iter()
            .map(|((device, triton), keys)| {
                serde_json::json!({"device": device, "triton": triton, "keys": keys})
            })
            .collect();
        sidecar.insert("foreign".into(), Value::Array(list));
    }
    count
}

/// `NVIDIA A100 with Triton 3.1.0`, unknown parts said so.
pub fn describe((device, triton): &Made) -> String {
    format!(
        "{} with Triton {}",
        device.as_str().unwrap_or("an unknown device"),
        triton.as_str().unwrap_or("unknown")
    )
}

/// The sidecar as written: pretty JSON and a newline.
pub fn to_bytes(sidecar: &Map<String, Value>) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(sidecar)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The sidecar already in DIR, when it is the harness's (else None: nothing of it is kept).
pub fn load(path: &std::path::Path) -> Option<Map<String, Value>> {
    parse(&toolkit::file::read(path).ok()?).ok()
}

/// Adds `seconds` (`{kernel: {key: seconds}}` entries) under `sidecar`'s `tune_seconds` where it
/// has no figure for the key yet: the seconds of the keys the published record keeps.
pub fn keep_tune_seconds<'a>(
    sidecar: &mut Map<String, Value>,
    seconds: impl IntoIterator<Item = (&'a str, &'a str, &'a Value)>,
) {
    let tune = sidecar
        .entry("tune_seconds")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(tune) = tune else { return };
    for (kernel, key, value) in seconds {
        let keys = tune
            .entry(kernel.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(keys) = keys {
            keys.entry(key.to_owned()).or_insert_with(|| value.clone());
        }
    }
}

/// Every `(kernel, key, seconds)` of a sidecar's `tune_seconds`.
pub fn tune_entries(sidecar: &Map<String, Value>) -> Vec<(&str, &str, &Value)> {
    let Some(Value::Object(kernels)) = sidecar.get("tune_seconds") else {
        return Vec::new();
    };
    kernels
        .iter()
        .filter_map(|(kernel, keys)| Some((kernel, keys.as_object()?)))
        .flat_map(|(kernel, keys)| {
            keys.iter()
                .map(move |(key, v)| (kernel.as_str(), key.as_str(), v))
        })
        .collect()
}

/// A harness sidecar of the version this build reads, as its object; else why not.
fn parse(bytes: &[u8]) -> Result<Map<String, Value>, String> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(map)) if map.get("format").and_then(Value::as_str) == Some(FORMAT) => {
            match map.get("version") {
                Some(v) if v.as_u64().is_some_and(|v| READS.contains(&v)) => Ok(map),
                v => Err(format!(
                    "sidecar version {}, this build reads 1 or 2",
                    v.unwrap_or(&Value::Null)
                )),
            }
        }
        Ok(_) => Err(format!("not a {FORMAT} file")),
        Err(e) => Err(format!("not JSON ({e})")),
    }
}

/// `field` over the shards that hold it: None where none does (the field is left out); `null`
/// where the fold has no number to give (no shard's is one, or a sum would miss a shard's).
fn process_seconds(read: &[ShardSidecar], field: &str, fold: Fold) -> Option<Value> {
    let held: Vec<&Value> = read.iter().filter_map(|(_, s)| s.get(field)).collect();
    if held.is_empty() {
        return None;
    }
    let numbers: Vec<f64> = held.iter().filter_map(|v| v.as_f64()).collect();
    let folded = match fold {
        Fold::Max => numbers.iter().copied().reduce(f64::max),
        Fold::Sum if numbers.len() == read.len() => Some(numbers.iter().sum()),
        Fold::Sum => None,
    };
    Some(folded.map_or(Value::Null, Value::from))
}

/// Every shard's `{kernel: {key: value}}` under `field` (`tune_seconds`, `race`, and
/// `race_settings`, whose "keys" are its fields), the first shard's where several have a key.
fn per_key(read: &[ShardSidecar], field: &str) -> Map<String, Value> {
    let mut all = Map::new();
    for (_, sidecar) in read {
        let Some(Value::Object(kernels)) = sidecar.get(field) else {
            continue;
        };
        for (kernel, keys) in kernels {
            let Value::Object(keys) = keys else { continue };
            let slot = all
                .entry(kernel.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(slot) = slot {
                for (key, seconds) in keys {
                    slot.entry(key.clone()).or_insert_with(|| seconds.clone());
                }
            }
        }
    }
    all
}

/// The kernels whose fingerprint in the new sidecar `new` differs from the one the sidecar `old`
/// names (a changed source or config list): the old record's keys of those were decided for
/// another kernel and are not kept. A kernel either side names no string for is not one.
pub fn changed_kernels(old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<String> {
    let (Some(Value::Object(old)), Some(Value::Object(new))) =
        (old.get("kernels"), new.get("kernels"))
    else {
        return Vec::new();
    };
    new.iter()
        .filter(|(kernel, now)| {
            now.is_string()
                && old
                    .get(*kernel)
                    .is_some_and(|then| then.is_string() && then != *now)
        })
        .map(|(kernel, _)| kernel.clone())
        .collect()
}

/// The old sidecar's fingerprints of the kernels whose keys the published record keeps from it and
/// the new sidecar does not name, so that the next run still checks them.
pub fn keep_fingerprints(new: &mut Map<String, Value>, old: &Map<String, Value>) {
    let Some(Value::Object(then)) = old.get("kernels") else {
        return;
    };
    let Some(Value::Object(now)) = new.get_mut("kernels") else {
        return;
    };
    for (kernel, fingerprint) in then {
        if !now.contains_key(kernel) {
            now.insert(kernel.clone(), fingerprint.clone());
        }
    }
}

/// Every shard's `kernels` (`{kernel: fingerprint}`) as one: the union, a kernel whose shards name
/// two fingerprints (or one names `null`) getting `null`, which the harness reads as a kernel
/// whose keys are tuned again, with a note naming it. None where no shard's sidecar has the field
/// (sidecars from before fingerprints), so that the published one has none either.
fn kernels(read: &[ShardSidecar], notes: &mut Vec<String>) -> Option<Map<String, Value>> {
    // (shard, fingerprint, whether a running kernel confirmed it: not in the shard's `unchecked`)
    type Held = Vec<(usize, Value, bool)>;
    let mut seen: Vec<(String, Held)> = Vec::new();
    let mut any = false;
    for (shard, sidecar) in read {
        let Some(Value::Object(kernels)) = sidecar.get("kernels") else {
            continue;
        };
        any = true;
        let unchecked = |kernel: &str| {
            sidecar
                .get("unchecked")
                .and_then(Value::as_array)
                .is_some_and(|u| u.iter().any(|k| k.as_str() == Some(kernel)))
        };
        for (kernel, fingerprint) in kernels {
            if !(fingerprint.is_string() || fingerprint.is_null()) {
                continue;
            }
            let ran = !unchecked(kernel);
            match seen.iter_mut().find(|(k, _)| k == kernel) {
                Some((_, held)) => held.push((*shard, fingerprint.clone(), ran)),
                None => seen.push((kernel.clone(), vec![(*shard, fingerprint.clone(), ran)])),
            }
        }
    }
    if !any {
        return None;
    }
    let mut out = Map::new();
    for (kernel, held) in seen {
        let first = &held[0].1;
        if held.iter().all(|(_, v, _)| v == first) {
            out.insert(kernel, first.clone());
            continue;
        }
        // The shards that ran the kernel agree: theirs is the kernel as it is; a shard that only
        // carried an earlier fingerprint (its keys left out by warmup-merge) is no disagreement.
        let mut ran: Vec<&Value> = held
            .iter()
            .filter(|(_, _, r)| *r)
            .map(|(_, v, _)| v)
            .collect();
        ran.dedup();
        if let [running] = ran[..] {
            if running.is_string()
                && held
                    .iter()
                    .filter(|(_, _, r)| *r)
                    .all(|(_, v, _)| v == running)
            {
                out.insert(kernel, running.clone());
                continue;
            }
        }
        let values: Vec<(usize, &Value)> = held.iter().map(|(s, v, _)| (*s, v)).collect();
        notes.push(format!(
            "the shards' sidecars disagree on kernel {kernel}'s fingerprint ({}): the published \
             sidecar names none, so its keys are tuned again by the next record session",
            by_value(&values)
        ));
        out.insert(kernel, Value::Null);
    }
    Some(out)
}

/// `"NVIDIA H200" in shards 0, 1; "NVIDIA A100" in shard 3`.
fn by_value(values: &[(usize, &Value)]) -> String {
    let mut groups: Vec<(&Value, Vec<String>)> = Vec::new();
    for (shard, value) in values {
        match groups.iter_mut().find(|(v, _)| v == value) {
            Some((_, shards)) => shards.push(shard.to_string()),
            None => groups.push((value, vec![shard.to_string()])),
        }
    }
    groups
        .iter()
        .map(|(value, shards)| {
            let word = if shards.len() == 1 { "shard" } else { "shards" };
            format!("{value} in {word} {}", shards.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_grouped_with_their_shards_in_order() {
        let (h200, a100) = (json!("NVIDIA H200"), json!("NVIDIA A100"));
        let values = [(0, &h200), (1, &a100), (2, &h200)];
        assert_eq!(
            by_value(&values),
            "\"NVIDIA H200\" in shards 0, 2; \"NVIDIA A100\" in shard 1"
        );
    }

    fn sidecar(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("a sidecar is an object"),
        }
    }

    #[test]
    fn kernel_fingerprints_are_the_union_and_a_disagreement_is_null_and_named() {
        let read = vec![
            (
                0,
                sidecar(json!({"kernels": {"m:a": "aaaa", "m:b": "bbbb"}})),
            ),
            (
                1,
                sidecar(json!({"kernels": {"m:a": "aaaa", "m:b": "cccc", "m:c": "dddd"}})),
            ),
            (2, sidecar(json!({"tune_seconds": {}}))), // a shard from before fingerprints
        ];
        let mut notes = Vec::new();
        let out = kernels(&read, &mut notes).expect("two shards hold kernels");
        assert_eq!(
            Value::Object(out),
            json!({"m:a": "aaaa", "m:b": null, "m:c": "dddd"})
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0]
                .contains("kernel m:b's fingerprint (\"bbbb\" in shard 0; \"cccc\" in shard 1)"),
            "{notes:?}"
        );
    }

    #[test]
    fn each_shards_raced_keys_are_kept_the_first_shards_where_two_have_one() {
        let read = vec![
            (
                0,
                sidecar(json!({"race": {"m:a": {"[1]": {"raced": 9, "retimed": 2}}}})),
            ),
            (
                1,
                sidecar(json!({"race": {"m:a": {"[1]": {"raced": 9, "retimed": 3},
                                               "[2]": {"raced": 9, "retimed": 1}}}})),
            ),
            (2, sidecar(json!({"tune_seconds": {}}))), // a shard that raced nothing
        ];
        assert_eq!(
            Value::Object(per_key(&read, "race")),
            json!({"m:a": {"[1]": {"raced": 9, "retimed": 2}, "[2]": {"raced": 9, "retimed": 1}}})
        );
        assert!(per_key(&read[2..], "race").is_empty());
    }

    #[test]
    fn sidecars_without_fingerprints_publish_none() {
        let read = vec![(0, sidecar(json!({"tune_seconds": {}})))];
        let mut notes = Vec::new();
        assert!(kernels(&read, &mut notes).is_none() && notes.is_empty());
        let null = vec![
            (0, sidecar(json!({"kernels": {"m:a": null}}))),
            (1, sidecar(json!({"kernels": {"m:a": "aaaa"}}))),
        ];
        let out = kernels(&null, &mut notes).expect("kernels");
        assert_eq!(Value::Object(out), json!({"m:a": null}));
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn foreign_names_every_key_not_made_where_the_sidecar_says_grouped_by_place() {
        let old = sidecar(json!({"device": "NVIDIA A100", "triton": "3.1.0",
            "foreign": [{"device": "NVIDIA H100", "triton": "3.1.0", "keys": {"m:a": ["[2]"]}}]}));
        let there = Provenance::of(&old);
        assert_eq!(
            there.made("m:a", "[1]"),
            &(json!("NVIDIA A100"), json!("3.1.0"))
        );
        assert_eq!(
            there.made("m:a", "[2]"),
            &(json!("NVIDIA H100"), json!("3.1.0"))
        );
        let mut new = sidecar(json!({"device": "NVIDIA H200", "triton": "3.6.0"}));
        let here = own(&new);
        let keys = [
            ("m:a", "[1]"),
            ("m:a", "[2]"),
            ("m:b", "[3]"),
            ("m:b", "[1]"),
        ];
        let made: Vec<(&str, &str, Made)> = keys
            .iter()
            .map(|&(k, key)| {
                let at = if k == "m:b" {
                    here.clone()
                } else {
                    there.made(k, key).clone()
                };
                (k, key, at)
            })
            .collect();
        let named = set_foreign(&mut new, made.iter().map(|(k, key, at)| (*k, *key, at)));
        assert_eq!(named, 2);
        assert_eq!(
            new["foreign"],
            json!([{"device": "NVIDIA A100", "triton": "3.1.0", "keys": {"m:a": ["[1]"]}},
                   {"device": "NVIDIA H100", "triton": "3.1.0", "keys": {"m:a": ["[2]"]}}])
        );
        // Nothing made elsewhere: no field.
        let mut all_here = new.clone();
        set_foreign(&mut all_here, std::iter::empty());
        assert!(!all_here.contains_key("foreign"));
    }

    #[test]
    fn only_the_harness_sidecar_of_this_version_is_read() {
        let ok = br#"{"format": "warmup-harness-meta", "version": 1, "device": null}"#;
        assert!(parse(ok).is_ok());
        let two = br#"{"format": "warmup-harness-meta", "version": 2, "foreign": []}"#;
        assert!(parse(two).is_ok());
        let newer = br#"{"format": "warmup-harness-meta", "version": 3}"#;
        assert_eq!(
            parse(newer).expect_err("newer"),
            "sidecar version 3, this build reads 1 or 2"
        );
        assert_eq!(
            parse(br#"{"format": "other"}"#).expect_err("other"),
            "not a warmup-harness-meta file"
        );
        assert!(parse(b"{").expect_err("torn").starts_with("not JSON"));
    }
}
