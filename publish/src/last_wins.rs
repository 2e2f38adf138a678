//! The last-wins union of the records a publish keeps (warmup-merge's union of the shards,
//! `merge::first_wins`, is the other way round). A record is never shortened by a publish: the record already in DIR, and the keys a killed
//! record session journaled there, stay in the record that replaces it, under the new record's
//! configs where both have a key. A sweep stopped before it met a key, a `--fresh` sweep that
//! re-tuned some keys, and two runs publishing into one folder one after the other (under the
//! op's record lock) all end with every key the folder held.
//!
//! Python's `dict.update` is the model: the old record's kernels and keys keep their order, a key
//! the new record has takes its config, and the new record's other keys follow. Texts are those
//! `json.dumps(merged, indent=2, ensure_ascii=False)` writes (what [`Records`] holds), so the
//! record written is the file the harness itself would write for the same dict.

use protocol::records::Records;
use std::collections::HashMap;

/// One kernel's keys, in first-seen order, and where each sits.
#[derive(Debug, Default)]
struct Bucket {
    keys: Vec<(String, String)>,
    at: HashMap<String, usize>,
}

/// `{kernel: {key: config}}` being built, as texts: a key's last value wins.
#[derive(Debug, Default)]
pub struct LastWins {
    kernels: Vec<(String, Bucket)>,
    at: HashMap<String, usize>,
}

impl LastWins {
    /// Sets `kernel`'s `key` to `config` (an existing key keeps its place).
    pub fn set(&mut self, kernel: &str, key: &str, config: &str) {
        let bucket = self.bucket(kernel);
        match bucket.at.get(key) {
            Some(&i) => config.clone_into(&mut bucket.keys[i].1),
            None => {
                bucket.at.insert(key.to_owned(), bucket.keys.len());
                bucket.keys.push((key.to_owned(), config.to_owned()));
            }
        }
    }

    fn bucket(&mut self, kernel: &str) -> &mut Bucket {
        let i = match self.at.get(kernel) {
            Some(&i) => i,
            None => {
                self.at.insert(kernel.to_owned(), self.kernels.len());
                self.kernels.push((kernel.to_owned(), Bucket::default()));
                self.kernels.len() - 1
            }
        };
        &mut self.kernels[i].1
    }

    /// Every good bucket of a record file over what the union holds (a kernel with no keys
    /// still makes its bucket).
    pub fn update(&mut self, records: &Records) {
        self.update_except(records, &[]);
    }

    /// As [`LastWins::update`], leaving out the kernels `skip` names (as their JSON texts, quotes
    /// included): those whose keys another kernel's source or configs decided.
    pub fn update_except(&mut self, records: &Records, skip: &[String]) {
        let text = records.text.as_str();
        for (kernel, keys) in &records.buckets {
            let kernel = &text[kernel.clone()];
            if skip.iter().any(|s| s == kernel) {
                continue;
            }
            self.bucket(kernel);
            for (key, config) in keys {
                self.set(kernel, &text[key.clone()], &text[config.clone()]);
            }
        }
    }

    pub fn kernels(&self) -> usize {
        self.kernels.len()
    }

    /// Every (kernel, key) held, as their JSON texts, in order.
    pub fn keys(&self) -> impl Iterator<Item = (&str, &str)> {
        self.kernels.iter().flat_map(|(kernel, bucket)| {
            bucket
                .keys
                .iter()
                .map(move |(key, _)| (kernel.as_str(), key.as_str()))
        })
    }

    pub fn configs(&self) -> usize {
        self.kernels.iter().map(|(_, b)| b.keys.len()).sum()
    }

    /// `json.dumps(union, indent=2, ensure_ascii=False) + "\n"`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = String::new();
        let mut sep = "{\n  ";
        for (kernel, bucket) in &self.kernels {
            out.push_str(sep);
            sep = ",\n  ";
            out.push_str(kernel);
            if bucket.keys.is_empty() {
                out.push_str(": {}");
                continue;
            }
            let mut key_sep = ": {\n    ";
            for (key, config) in &bucket.keys {
                out.push_str(key_sep);
                key_sep = ",\n    ";
                out.push_str(key);
                out.push_str(": ");
                out.push_str(config);
            }
            out.push_str("\n  }");
        }
        out.push_str(if self.kernels.is_empty() {
            "{}\n"
        } else {
            "\n}\n"
        });
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str) -> Records {
        Records::parse(text.as_bytes()).expect("records")
    }

    #[test]
    fn the_old_records_keys_stay_and_the_new_configs_win() {
        let mut union = LastWins::default();
        union.update(&records(
            r#"{"k": {"a": {"x": 1}, "b": {"x": 2}}, "old": {"z": 0}, "empty": {}}"#,
        ));
        union.update(&records(
            r#"{"k": {"b": {"x": 20}, "c": {"x": 3}}, "new": {"n": 1}}"#,
        ));
        let text = String::from_utf8(union.to_bytes()).expect("utf-8");
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            value,
            serde_json::json!({
                "k": {"a": {"x": 1}, "b": {"x": 20}, "c": {"x": 3}},
                "old": {"z": 0}, "empty": {}, "new": {"n": 1}
            })
        );
        // dict.update's order: old keys in place, new ones after.
        let keys: Vec<&str> = value["k"]
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!((union.kernels(), union.configs()), (4, 5));
    }

    #[test]
    fn the_text_is_what_python_json_dumps_with_indent_2_writes() {
        let mut union = LastWins::default();
        let merged = "{\n  \"k\": {\n    \"a\": {\n      \"BLOCK\": 64\n    },\n    \"b\": NaN\n  },\n  \"e\": {}\n}\n";
        union.update(&records(merged));
        assert_eq!(String::from_utf8(union.to_bytes()).expect("utf-8"), merged);
        assert_eq!(LastWins::default().to_bytes(), b"{}\n");
    }
}
