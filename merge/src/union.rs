//! The union of the shards' `{kernel: {key: config}}` maps, as the plugin's `_merge` built it:
//! kernels and keys in first-seen order, the first value of a key wins. Unlike the plugin, every
//! key whose later values differ (by Python's `==`) is kept as a conflict with all its values,
//! so one can see how far parallel interference moved the sweep.

use protocol::fxhash::FxHashMap;
use protocol::pyjson::{self, Value};

/// Where a value came from: the input's index in merge order.
pub type Origin = usize;

/// A key that got different winners: the kept value and every later value unequal to it.
#[derive(Debug, Clone)]
pub struct Conflict {
    pub kernel: String,
    pub key: String,
    pub kept: (Origin, Value),
    pub differing: Vec<(Origin, Value)>,
}

#[derive(Debug, Default)]
struct Bucket {
    keys: Vec<(String, Value)>,
    index: FxHashMap<String, (usize, Origin)>,
}

/// The merge in progress.
#[derive(Debug, Default)]
pub struct Union {
    kernels: Vec<(String, Bucket)>,
    index: FxHashMap<String, usize>,
    conflicts: Vec<Conflict>,
    /// (kernel position, key position) -> position in `conflicts`.
    conflict_index: FxHashMap<(usize, usize), usize>,
    configs: usize,
}

impl Union {
    /// Adds one input's bucket for `kernel`; an empty bucket still creates the kernel.
    pub fn add(&mut self, origin: Origin, kernel: String, keys: Vec<(String, Value)>) {
        let k = match self.index.get(&kernel) {
            Some(&k) => k,
            None => {
                self.index.insert(kernel.clone(), self.kernels.len());
                self.kernels.push((kernel, Bucket::default()));
                self.kernels.len() - 1
            }
        };
        let (name, bucket) = &mut self.kernels[k];
        for (key, value) in keys {
            match bucket.index.get(&key) {
                None => {
                    bucket
                        .index
                        .insert(key.clone(), (bucket.keys.len(), origin));
                    bucket.keys.push((key, value));
                    self.configs += 1;
                }
                Some(&(i, kept_origin)) => {
                    let kept = &bucket.keys[i].1;
                    if pyjson::py_eq(kept, &value) {
                        continue;
                    }
                    let c = match self.conflict_index.get(&(k, i)) {
                        Some(&c) => c,
                        None => {
                            self.conflicts.push(Conflict {
                                kernel: name.clone(),
                                key,
                                kept: (kept_origin, kept.clone()),
                                differing: Vec::new(),
                            });
                            self.conflict_index.insert((k, i), self.conflicts.len() - 1);
                            self.conflicts.len() - 1
                        }
                    };
                    self.conflicts[c].differing.push((origin, value));
                }
            }
        }
    }

    pub fn kernels(&self) -> usize {
        self.kernels.len()
    }

    pub fn configs(&self) -> usize {
        self.configs
    }

    pub fn conflicts(&self) -> &[Conflict] {
        &self.conflicts
    }

    /// The merged records as one value, ready for [`pyjson::dumps`].
    pub fn into_value(self) -> Value {
        Value::Object(
            self.kernels
                .into_iter()
                .map(|(kernel, bucket)| (kernel, Value::Object(bucket.keys)))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<(String, Value)> {
        match pyjson::loads(text).expect("json") {
            Value::Object(entries) => entries,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn conflicting_keys_keep_first_shard_value() {
        let mut u = Union::default();
        u.add(0, "k".into(), keys(r#"{"a": 1, "b": 2}"#));
        u.add(1, "k".into(), keys(r#"{"a": 1.0, "b": 3, "c": 4}"#));
        u.add(2, "k".into(), keys(r#"{"b": 2, "c": 5}"#));
        u.add(3, "k".into(), keys(r#"{"b": 7}"#));
        assert_eq!((u.kernels(), u.configs()), (1, 3));
        let c: Vec<_> = u
            .conflicts()
            .iter()
            .map(|c| {
                (
                    c.key.as_str(),
                    c.kept.0,
                    c.differing.iter().map(|d| d.0).collect::<Vec<_>>(),
                )
            })
            .collect();
        assert_eq!(c, vec![("b", 0, vec![1, 3]), ("c", 1, vec![2])]);
        assert_eq!(
            pyjson::dumps(&u.into_value()),
            "{\n  \"k\": {\n    \"a\": 1,\n    \"b\": 2,\n    \"c\": 4\n  }\n}\n"
        );
    }

    #[test]
    fn a_top_level_nan_conflicts_but_a_nested_one_does_not() {
        let mut u = Union::default();
        u.add(0, "k".into(), keys(r#"{"a": NaN, "b": [NaN]}"#));
        u.add(1, "k".into(), keys(r#"{"a": NaN, "b": [NaN]}"#));
        let c: Vec<_> = u.conflicts().iter().map(|c| c.key.as_str()).collect();
        assert_eq!(c, vec!["a"]);
    }

    #[test]
    fn empty_buckets_still_create_their_kernel() {
        let mut u = Union::default();
        u.add(0, "e".into(), Vec::new());
        assert_eq!((u.kernels(), u.configs()), (1, 0));
        assert_eq!(pyjson::dumps(&u.into_value()), "{\n  \"e\": {}\n}\n");
    }
}
