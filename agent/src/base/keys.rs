//! Where each key of the config file was written, so that an error found after parsing (a
//! sink's bad facility, a plugin's unknown setting) points at the key's own line, not at its
//! table's header: [`KeyLines`], one per table.
//!
//! The lines come from toml's spanned document ([`toml::de::DeTable`]); the errors come as
//! text that starts with the key they are about (`tls.ca: …`), or serde's "unknown field
//! `x`" (whose key is not in its path), which [`KeyLines::locate`] reads back.

use std::collections::BTreeMap;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The keys of one table and their lines, and where the table itself starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyLines {
    file: String,
    header: usize,
    /// `address`, `tls`, `tls.ca`, `disks[1]` → 1-based line.
    lines: BTreeMap<String, usize>,
}

impl KeyLines {
    /// The keys under `value` (a table of the file read as `text`), at `file`.
    pub fn of(file: &str, text: &str, value: &Spanned<DeValue<'_>>) -> KeyLines {
        let mut lines = BTreeMap::new();
        if let DeValue::Table(table) = value.get_ref() {
            collect(text, table, "", &mut lines);
        }
        KeyLines {
            file: file.to_string(),
            header: line_of(text, value.span().start),
            lines,
        }
    }

    /// `file:line` of the table's header.
    pub fn origin(&self) -> String {
        format!("{}:{}", self.file, self.header)
    }

    /// `file:line` of `key` (or of the longest part of it this table has), else of the
    /// table's header.
    pub fn at(&self, key: &str) -> String {
        let line = self.deepest_line(key).unwrap_or(self.header);
        format!("{}:{line}", self.file)
    }

    /// The message as the config's errors read: `file:line: PREFIX.key: rest` at the line of
    /// the key the message is about, or `file:line: PREFIX: message` at the table's header
    /// when it names no key of this table. `prefix` names the table (`sink[0]`,
    /// `plugins.hdd-saturation`).
    pub fn locate(&self, prefix: &str, message: &str) -> String {
        if let Some((key, rest)) = self.key_of(message)
            && let Some(line) = self.deepest_line(&key)
        {
            return format!("{}:{line}: {prefix}.{key}: {rest}", self.file);
        }
        format!("{}:{}: {prefix}: {message}", self.file, self.header)
    }

    /// The key a message is about, and the rest of it.
    fn key_of(&self, message: &str) -> Option<(String, String)> {
        // serde's unknown field: its path (if any) is the table that holds it.
        if let Some(start) = message.find("unknown field `") {
            let name = &message[start + "unknown field `".len()..];
            let name = &name[..name.find('`')?];
            let parent = message[..start].trim_end_matches(": ");
            // Some paths end in the unknown key already (serde_path_to_error), some at the
            // table that holds it.
            let key = if parent.is_empty() || parent.contains(' ') {
                name.to_string()
            } else if parent == name || parent.ends_with(&format!(".{name}")) {
                parent.to_string()
            } else {
                format!("{parent}.{name}")
            };
            return Some((key, message[start..].to_string()));
        }
        let (key, rest) = message.split_once(": ")?;
        (!key.is_empty() && !key.contains(' ')).then(|| (key.to_string(), rest.to_string()))
    }

    /// The line of `key`, or of the longest part of it this table has (`tls.cert/tls.key` →
    /// `tls`).
    fn deepest_line(&self, key: &str) -> Option<usize> {
        let ends = key
            .match_indices(['.', '[', '/'])
            .map(|(i, _)| i)
            .chain([key.len()]);
        ends.rev()
            .find_map(|end| self.lines.get(&key[..end]))
            .copied()
    }
}

/// A table read into its serde type, every key's error prefixed with the key's path as the
/// file spells it (`tls.ca: invalid type: …`; serde's message alone for the table itself),
/// ready for [`KeyLines::locate`]. Sinks and `[plugins]` are read through here.
pub fn decode_table<T: serde::de::DeserializeOwned>(table: toml::Table) -> Result<T, String> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let path = e.path().to_string();
        // `message` is the error alone, without the "in `tls`" context lines.
        let message = e.into_inner().message().trim_end().to_string();
        if path == "." {
            message
        } else {
            format!("{path}: {message}")
        }
    })
}

fn collect(text: &str, table: &DeTable<'_>, prefix: &str, out: &mut BTreeMap<String, usize>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        out.insert(path.clone(), line_of(text, key.span().start));
        walk(text, value, &path, out);
    }
}

fn walk(text: &str, value: &Spanned<DeValue<'_>>, path: &str, out: &mut BTreeMap<String, usize>) {
    match value.get_ref() {
        DeValue::Table(table) => collect(text, table, path, out),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let at = format!("{path}[{i}]");
                out.insert(at.clone(), line_of(text, item.span().start));
                walk(text, item, &at, out);
            }
        }
        _ => {}
    }
}

/// 1-based line of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
