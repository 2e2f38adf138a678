//! Quoting for POSIX shells: the one rule that `warmup-spawn --dry-run` writes its `env` lines
//! with and `warmup-publish --format sh` writes the replay folder with, so that what a person
//! pastes and what a script `eval`s read back as the exact words.

/// `word` quoted for a POSIX shell: as is when it holds only characters no shell treats
/// specially, else in single quotes, each `'` written as `'\''`. Single quotes carry every
/// other byte literally, newlines and non-UTF-8 bytes included.
pub fn quote_bytes(word: &[u8]) -> Vec<u8> {
    let safe = |b: &u8| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(b);
    if !word.is_empty() && word.iter().all(safe) {
        return word.to_vec();
    }
    let mut out = Vec::with_capacity(word.len() + 2);
    out.push(b'\'');
    for &b in word {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

/// [`quote_bytes`] of a UTF-8 word.
pub fn quote(word: &str) -> String {
    // Quoting adds ASCII only, so UTF-8 in is UTF-8 out and nothing is replaced here.
    String::from_utf8_lossy(&quote_bytes(word.as_bytes())).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_the_shell() {
        assert_eq!(quote("GPU-8f2a/1"), "GPU-8f2a/1");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$HOME"), "'$HOME'");
        assert_eq!(quote("ünï"), "'ünï'");
        assert_eq!(quote_bytes(b"a\xffb\n"), b"'a\xffb\n'");
    }
}
