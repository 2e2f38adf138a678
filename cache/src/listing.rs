//! `warmup-cache list`'s two forms: a table for people, one name a cell on one line whatever
//! bytes it holds ([`shown`]), and a JSON array for scripts.

use crate::entries::Entry;
use std::ffi::OsStr;
use std::fmt::Write;
use std::time::SystemTime;

/// A name as one cell of a table or one word of a line: control characters, other line breaks
/// and backslashes escaped as Rust writes them (`\n`, `\u{1b}`, `\\`), each byte that is not
/// UTF-8 as `\xNN`; every other character as it is.
pub fn shown(name: impl AsRef<OsStr>) -> String {
    let mut out = String::new();
    for chunk in name.as_ref().as_encoded_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() || c == '\\' || (c.is_whitespace() && c != ' ') {
                out.extend(c.escape_debug());
            } else {
                out.push(c);
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out
}

/// The table: a header, then one row per entry, columns padded to their widest cell.
pub fn table(entries: &[Entry]) -> String {
    let count = |n: Option<usize>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
    let rows: Vec<[String; 8]> = entries
        .iter()
        .map(|e| {
            [
                shown(&e.op),
                count(e.kernels),
                count(e.keys),
                e.triton.as_deref().map_or_else(|| "-".into(), shown),
                e.device.as_deref().map_or_else(|| "-".into(), shown),
                size(e.bytes),
                e.last_use.map_or_else(|| "-".into(), date),
                e.folder.file_name().map(shown).unwrap_or_default(),
            ]
        })
        .collect();
    let head = [
        "OP", "KERNELS", "KEYS", "TRITON", "DEVICE", "SIZE", "LAST USE", "FOLDER",
    ]
    .map(str::to_owned);
    let mut widths = head.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in std::iter::once(&head).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
}

/// The JSON array; JSON carries text only, so a name that is not UTF-8 (`op`, `folder`) has
/// U+FFFD for each byte that is not, as warmup-plan's `--format json` writes one.
pub fn json(entries: &[Entry]) -> String {
    let items: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let unix = e
                .last_use
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map(|d| d.as_secs());
            serde_json::json!({
                "op": e.op.to_string_lossy(),
                "kernels": e.kernels,
                "keys": e.keys,
                "triton": e.triton,
                "device": e.device,
                "bytes": e.bytes,
                "last_use": unix,
                "folder": e.folder.to_string_lossy(),
            })
        })
        .collect();
    let mut text = serde_json::Value::from(items).to_string();
    text.push('\n');
    text
}

fn size(bytes: u64) -> String {
    let mut value = bytes as f64;
    for unit in ["B", "K", "M", "G"] {
        if value < 1024.0 || unit == "G" {
            return if unit == "B" {
                format!("{bytes}B")
            } else {
                format!("{value:.1}{unit}")
            };
        }
        value /= 1024.0;
    }
    unreachable!("G ends the loop")
}

/// `YYYY-MM-DD HH:MM` in UTC (the civil-from-days rule, so no time zone database is needed).
fn date(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (h, m) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_are_utc_civil_dates() {
        let at = |s: u64| date(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01 00:00");
        assert_eq!(at(951_782_400), "2000-02-29 00:00");
        assert_eq!(at(1_796_300_000), "2026-12-03 12:13");
    }

    #[test]
    fn sizes_are_short() {
        assert_eq!(size(512), "512B");
        assert_eq!(size(2048), "2.0K");
        assert_eq!(size(5 << 20), "5.0M");
    }

    #[test]
    fn a_name_is_one_cell_on_one_line_whatever_its_bytes() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(shown("NVIDIA H200"), "NVIDIA H200");
        assert_eq!(shown("a\nb\tc\u{1b}\u{2028}"), "a\\nb\\tc\\u{1b}\\u{2028}");
        assert_eq!(
            shown("a\\xff"),
            "a\\\\xff",
            "a backslash is escaped, so bytes read alike never"
        );
        assert_eq!(shown(OsStr::from_bytes(b"mm\xff\xfe")), "mm\\xff\\xfe");
        assert_eq!(shown("é"), "é");
    }
}
