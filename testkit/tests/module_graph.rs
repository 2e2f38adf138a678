//! The house's module graph, read from the sources: in the tools' crates ([`LEAF_ROOTED`]) no
//! module names an item of its crate root (`crate::TOOL`: the root is the dispatch, its names
//! live in a leaf, `flags`), and in every crate no files import each other in a circle (`a` uses `b`, which uses
//! `a`, however long the way round). What a file uses is read off its paths (`crate::`, `super::`,
//! and a child module's name), up to its `#[cfg(test)]` module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// The crates whose root is their dispatch alone: no module names an item of it.
const LEAF_ROOTED: [&str; 3] = ["plan", "shard", "spawn"];

/// Each `.rs` file of `src` but `main.rs` (a binary of its own), by its module path.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src");
            let mut module: Module = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            match module.last().map(String::as_str) {
                Some("main") if module.len() == 1 => continue,
                Some("lib" | "mod") => {
                    module.pop();
                }
                _ => {}
            }
            found.insert(module, path);
        }
    }
    found
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The paths written in `code` (`a::b::{c, d::e}` gives `a::b::c` and `a::b::d::e`).
fn paths(code: &str) -> Vec<Module> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = ident_char(bytes[i])
            && !bytes[i].is_ascii_digit()
            && (i == 0 || !(ident_char(bytes[i - 1]) || bytes[i - 1] == b':'));
        if !starts {
            i += 1;
            continue;
        }
        let (ident, next) = ident_at(bytes, i);
        if bytes[next..].starts_with(b"::") {
            i = tree(bytes, next, vec![ident], &mut out);
        } else {
            i = next;
        }
    }
    out
}

fn ident_at(bytes: &[u8], mut i: usize) -> (String, usize) {
    let start = i;
    while i < bytes.len() && ident_char(bytes[i]) {
        i += 1;
    }
    (String::from_utf8_lossy(&bytes[start..i]).into_owned(), i)
}

fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Reads `::rest` after `prefix` at `i`, pushing each full path; where it stops.
fn tree(bytes: &[u8], mut i: usize, mut prefix: Module, out: &mut Vec<Module>) -> usize {
    while bytes[i..].starts_with(b"::") {
        i = skip_space(bytes, i + 2);
        match bytes.get(i) {
            Some(b'{') => {
                i += 1;
                loop {
                    i = skip_space(bytes, i);
                    match bytes.get(i) {
                        Some(b'}') => return i + 1,
                        Some(b',') => i += 1,
                        Some(c) if ident_char(*c) => {
                            let (ident, next) = ident_at(bytes, i);
                            let mut path = prefix.clone();
                            path.push(ident);
                            i = tree(bytes, next, path, out);
                            if !bytes[i..].starts_with(b"::") {
                                // `self`, `x as y`: the subtree ends at `,` or `}`.
                                while i < bytes.len() && !matches!(bytes[i], b',' | b'}') {
                                    i += 1;
                                }
                            }
                        }
                        Some(_) => i += 1,
                        None => return i,
                    }
                }
            }
            Some(c) if ident_char(*c) => {
                let (ident, next) = ident_at(bytes, i);
                prefix.push(ident);
                i = next;
            }
            _ => break,
        }
    }
    out.push(prefix);
    i
}

/// What `module`'s code up to its tests uses of its crate: the modules it names, and whether it
/// names an item of the crate root.
fn uses(module: &Module, code: &str, known: &BTreeSet<Module>) -> (BTreeSet<Module>, bool) {
    let code: String = code
        .lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut targets = BTreeSet::new();
    let mut root_item = false;
    for path in paths(&code) {
        let mut abs: Module = match path[0].as_str() {
            "crate" => Vec::new(),
            "self" => module.clone(),
            "super" => {
                let mut base = module.clone();
                let mut rest = &path[..];
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                base.insert(0, String::new()); // marks "already absolute"
                base
            }
            first => {
                let mut child = module.clone();
                child.push(first.to_owned());
                if !known.contains(&child) {
                    continue;
                }
                module.clone()
            }
        };
        if abs.first().is_some_and(String::is_empty) {
            abs.remove(0);
        } else {
            let skip = usize::from(matches!(path[0].as_str(), "crate" | "self"));
            abs.extend(path[skip..].iter().cloned());
        }
        let target = (0..=abs.len())
            .rev()
            .map(|n| abs[..n].to_vec())
            .find(|m| known.contains(m))
            .unwrap_or_default();
        if &target == module {
            continue;
        }
        if target.is_empty() {
            root_item |= !abs.is_empty();
            continue;
        }
        targets.insert(target);
    }
    (targets, root_item)
}

/// A circle in `graph`, as the modules on it, if there is one.
fn circle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        at: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        done: &mut BTreeSet<Module>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(pos) = stack.iter().position(|m| m == at) {
            return Some(stack[pos..].to_vec());
        }
        if done.contains(at) {
            return None;
        }
        stack.push(at.clone());
        for next in graph.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, graph, done, stack) {
                return Some(found);
            }
        }
        stack.pop();
        done.insert(at.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut done, &mut Vec::new()))
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "lib".into()
    } else {
        m.join("::")
    }
}

/// The workspace's crates that have a library (`src/lib.rs`).
fn crates() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("workspace")
        .map(|e| e.expect("entry").path().join("src"))
        .filter(|src| src.join("lib.rs").is_file())
        .collect();
    found.sort();
    found
}

#[test]
fn no_module_names_its_crate_root_and_no_files_import_each_other_in_a_circle() {
    let crates = crates();
    assert!(crates.len() >= 8, "the workspace's crates: {crates:?}");
    let mut problems = Vec::new();
    for src in crates {
        let files = modules(&src);
        let krate = src.parent().and_then(Path::file_name);
        let leaf_rooted = LEAF_ROOTED
            .iter()
            .any(|c| krate == Some(std::ffi::OsStr::new(c)));
        let known: BTreeSet<Module> = files.keys().cloned().collect();
        let mut graph = BTreeMap::new();
        for (module, path) in &files {
            let code = std::fs::read_to_string(path).expect("source");
            let (targets, root_item) = uses(module, &code, &known);
            if leaf_rooted && root_item && !module.is_empty() {
                problems.push(format!(
                    "{}: names an item of its crate root; move it to a leaf module",
                    path.display()
                ));
            }
            if !module.is_empty() {
                // The root routes to every module: it is no link of a circle.
                graph.insert(module.clone(), targets);
            }
        }
        if let Some(found) = circle(&graph) {
            let names: Vec<String> = found.iter().map(name).collect();
            problems.push(format!(
                "{}: files import each other in a circle: {} -> {}",
                src.display(),
                names.join(" -> "),
                names[0]
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn paths_are_read_from_use_trees_and_expressions() {
    let found = paths("use crate::{a, b::{c, d as e}};\nlet x = super::f::g(crate::h);");
    let names: Vec<String> = found.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        names,
        [
            "crate::a",
            "crate::b::c",
            "crate::b::d",
            "super::f::g",
            "crate::h"
        ]
    );
}

#[test]
fn a_child_naming_its_parent_and_the_parent_naming_the_child_is_a_circle() {
    let known: BTreeSet<Module> = [vec![], vec!["m".into()], vec!["m".into(), "p".into()]]
        .into_iter()
        .collect();
    let parent = vec!["m".to_owned()];
    let child = vec!["m".to_owned(), "p".to_owned()];
    let (from_parent, _) = uses(&parent, "use p::Thing;", &known);
    let (from_child, root) = uses(&child, "use super::say;", &known);
    assert_eq!(from_parent, BTreeSet::from([child.clone()]));
    assert_eq!(from_child, BTreeSet::from([parent.clone()]));
    assert!(!root);
    let graph = BTreeMap::from([(parent, from_parent), (child, from_child)]);
    assert!(circle(&graph).is_some());
    let (_, root) = uses(
        &vec!["m".to_owned()],
        "eprintln!(\"{}\", crate::TOOL);",
        &known,
    );
    assert!(root, "crate::TOOL is the root's item");
}
