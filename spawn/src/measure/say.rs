//! What a run after the sweep says on stderr, as scripts/warmup says it: one prefix, [`TAG`],
//! which the script must match (the test below).

/// What the run says, as scripts/warmup says it (its `TAG`, checked below to be the same).
pub const TAG: &str = "[parallel-warmup]";

/// Says `line` on stderr, after [`TAG`].
pub fn say(line: &str) {
    eprintln!("{TAG} {line}");
}

#[cfg(test)]
mod tests {
    /// scripts/warmup says its own lines (before it becomes warmup-spawn) with the same prefix:
    /// one prefix, spelled here, which the script must match.
    #[test]
    fn scripts_warmup_says_its_lines_with_the_same_prefix() {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/warmup");
        let text = std::fs::read_to_string(script).expect("scripts/warmup");
        let line = format!("readonly TAG='{}'", super::TAG);
        assert!(text.lines().any(|l| l == line), "{script} lacks {line}");
    }
}
