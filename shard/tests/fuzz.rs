//! The library never panics on arbitrary or mutated YAML: bad input is an error, not a crash.

use proptest::prelude::*;

const SEED: &str = "base: &b {x: 1, y: [a, b]}\nop:\n  <<: *b\n  note: \"q\\n\"\n  shapes:\n    - [1, 2]\n    - !!int 3\n    - {k: *b}\n    - |\n      text\n    - 'it''s'\n";

fn mutate(seed: &str, edits: &[(usize, char)]) -> String {
    let mut chars: Vec<char> = seed.chars().collect();
    for &(pos, c) in edits {
        let at = pos % (chars.len() + 1);
        if c == '\u{0}' && at < chars.len() {
            chars.remove(at);
        } else {
            chars.insert(at, c);
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}", n in 1usize..6) {
        let _ = shard::split(text.as_bytes(), "x.yaml", "/x.yaml", "op", None, n, &shard::Balance::round_robin());
    }

    #[test]
    fn mutated_shape_files_never_panic(
        edits in proptest::collection::vec((0usize..200, prop::sample::select(vec![
            '\u{0}', ' ', '\n', ':', '-', '[', ']', '{', '}', '&', '*', '!', '?', '|', '>', '"', '\'', '#', '<', 'a', '1', '\t', '\u{2028}', '\u{85}', '%', ',',
        ])), 0..6),
        n in 1usize..6,
    ) {
        let text = mutate(SEED, &edits);
        let _ = shard::split(text.as_bytes(), "x.yaml", "/x.yaml", "op", None, n, &shard::Balance::round_robin());
    }
}

#[test]
fn the_seed_itself_shards() {
    let cut = shard::split(
        SEED.as_bytes(),
        "x.yaml",
        "/x.yaml",
        "op",
        None,
        2,
        &shard::Balance::round_robin(),
    )
    .expect("valid seed");
    assert_eq!(cut.total, 5);
    assert_eq!(cut.pieces.len(), 2);
    assert_eq!(cut.pieces[1].shapes, vec![1, 3]);
}
