//! A record session's journal, `DIR/.<op>.journal` (docs/CONTRACT.md, record mode): the keys it
//! decided and had not folded into `<op>.json` when it was killed. Read as the harness reads it
//! (`writer.journal_entries`): one JSON object a line, `{"kernel", "key", "config", "seconds",
//! "device", "triton"}` (the last two, where the key was made, absent from older lines), applied
//! in order; a line that is not one is skipped, and the last piece, without its newline,
//! was cut short.
//!
//! Whether its session is still alive is `protocol::session`'s to say.

use protocol::records::Records;

pub use protocol::history::sessions_path;

/// One journaled decision: the record's texts for kernel, key and config (as [`Records`] holds
/// them), and the kernel, key and seconds as the sidecar's `tune_seconds` holds them (None where
/// a key is no text serde can hold, such as a lone surrogate: then only the record gets it).
#[derive(Debug)]
pub struct Entry {
    pub record: Records,
    pub seconds: Option<(String, String, serde_json::Value)>,
    /// `(device, triton)` the line names, a string or null each; None where it names neither.
    pub made: Option<crate::meta::Made>,
}

/// The journal's entries, in order.
pub fn entries(data: &[u8]) -> Vec<Entry> {
    let mut lines: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    lines.pop(); // cut short, or empty after the last newline
    lines.into_iter().filter_map(entry).collect()
}

fn entry(line: &[u8]) -> Option<Entry> {
    use pyjson::Value;
    let text = std::str::from_utf8(line).ok()?;
    let Value::Object(fields) = pyjson::loads(text).ok()? else {
        return None;
    };
    let field = |name: &str| {
        fields
            .iter()
            .rev() // a repeated name keeps its last value, as json.loads does
            .find(|(k, _)| k.json() == format!("\"{name}\""))
            .map(|(_, v)| v)
    };
    let (Some(Value::Str(kernel)), Some(Value::Str(key)), Some(Value::Object(config))) =
        (field("kernel"), field("key"), field("config"))
    else {
        return None;
    };
    if !config
        .iter()
        .any(|(k, v)| k.json() == "\"kwargs\"" && matches!(v, Value::Object(_)))
    {
        return None;
    }
    let one = Value::Object(vec![(
        kernel.clone(),
        Value::Object(vec![(key.clone(), Value::Object(config.clone()))]),
    )]);
    let record = Records::parse(pyjson::dumps(&one).as_bytes()).ok()?;
    let line = serde_json::from_str::<serde_json::Value>(text).ok();
    let seconds = line.as_ref().and_then(|v| {
        Some((
            serde_json::from_str::<String>(kernel.json()).ok()?,
            serde_json::from_str::<String>(key.json()).ok()?,
            v.get("seconds").cloned().unwrap_or(serde_json::Value::Null),
        ))
    });
    let made = line.as_ref().and_then(|v| {
        let text = |f: &str| match v.get(f) {
            Some(serde_json::Value::String(s)) => serde_json::Value::String(s.clone()),
            _ => serde_json::Value::Null,
        };
        (v.get("device").is_some() || v.get("triton").is_some())
            .then(|| (text("device"), text("triton")))
    });
    Some(Entry {
        record,
        seconds,
        made,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_lines_that_are_decisions_are_read() {
        let data = concat!(
            r#"{"kernel": "k", "key": "(1, 2)", "config": {"kwargs": {"B": 16}}, "seconds": 1.5}"#,
            "\n",
            "not json\n",
            r#"{"kernel": "k", "key": "x", "config": {"no": "kwargs"}}"#,
            "\n",
            r#"{"kernel": "k", "key": "(3,)", "config": {"kwargs": {}}, "seconds": null}"#,
            "\n",
            r#"{"kernel": "k", "key": "cut", "config": {"kwargs": {}}}"#,
        );
        let read = entries(data.as_bytes());
        assert_eq!(read.len(), 2);
        let first = &read[0];
        let (kernel, keys) = &first.record.buckets[0];
        assert_eq!(&first.record.text[kernel.clone()], "\"k\"");
        assert_eq!(&first.record.text[keys[0].0.clone()], "\"(1, 2)\"");
        assert_eq!(
            first.seconds,
            Some(("k".into(), "(1, 2)".into(), serde_json::json!(1.5)))
        );
        assert_eq!(
            read[1].seconds.as_ref().map(|s| &s.2),
            Some(&serde_json::Value::Null)
        );
    }
}
