//! One definition per setting: a check's settings are declared once, with
//! `zpulse_proto::settings!` (type, default, rules, doc line), and every place that shows
//! them to people is made from that declaration: the settings part of its
//! page in `docs/checks/` (a TOML block and a table between two markers), its section of
//! the packaged `zpulse.toml` and its entry in `zpulse.toml(5)`'s list. A plugin's
//! `tests/settings.rs` calls [`assert_documented`]: a place that differs fails the test,
//! which says how to rewrite it (`UPDATE=1 cargo test -p … --test settings`).

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::path::Path;
use zpulse_proto::sdk::settings::Settings;

const DOCS_BEGIN: &str = "<!-- settings: made from the check's settings! declaration by tests/settings.rs; \
     UPDATE=1 rewrites -->";
const DOCS_END: &str = "<!-- /settings -->";

/// Every place that shows the settings of check `plugin` (whose `[plugins.NAME]` table `C`
/// declares) against what the declaration makes of them; with `UPDATE=1` in the
/// environment, rewrites those that differ instead.
pub fn assert_documented<C: Settings>(plugin: &str) {
    let root = crate::workspace();
    let update = std::env::var_os("UPDATE").is_some_and(|v| v == "1");
    let header = format!("[plugins.{plugin}]");

    // The declaration's own values read back as the defaults: what the places show is
    // what the plugin takes.
    let block = toml_block::<C>(plugin);
    let shown: C = toml::from_str(
        &block
            .lines()
            .filter(|l| !l.starts_with('#') && l.trim() != header)
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap_or_else(|e| panic!("{header}: the declared defaults do not read back: {e}"));
    assert_eq!(
        shown,
        C::default(),
        "{header}: the declared defaults do not read back"
    );

    let lib = read(&root.join(format!("plugins/{plugin}/src/lib.rs")));
    let in_doc = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .any(|l| l.trim() == header);
    assert!(
        !in_doc,
        "plugins/{plugin}/src/lib.rs: the crate doc shows {header}; point to \
         docs/checks/{plugin}.md instead (the settings are shown there, made from the \
         declaration)"
    );

    let page = root.join(format!("docs/checks/{plugin}.md"));
    let text = read(&page);
    let made = docs_region::<C>(plugin);
    let want = match (text.find(DOCS_BEGIN), text.find(DOCS_END)) {
        (Some(b), Some(e)) if b < e => {
            format!("{}{made}{}", &text[..b], &text[e + DOCS_END.len()..])
        }
        _ => panic!("{}: no {DOCS_BEGIN} … {DOCS_END} region", page.display()),
    };
    settle(&page, &text, &want, update);

    let conf = root.join("packaging/conf/zpulse.toml");
    let text = read(&conf);
    let want = replace_block(
        &text,
        &format!("#{header}"),
        |l| l.starts_with('#') && !l.starts_with("# ") && !l.starts_with("#["),
        &conffile_lines::<C>(plugin),
    )
    .unwrap_or_else(|| panic!("{}: no #{header} section", conf.display()));
    settle(&conf, &text, &want, update);

    let man = root.join("packaging/man/zpulse.toml.5");
    let text = read(&man);
    let item = format!(".It Ic {header}");
    let lines = man_lines::<C>(plugin);
    let want =
        replace_block(&text, &item, |l| l.starts_with(".Ic "), &lines).unwrap_or_else(|| {
            // A check not listed yet goes at the end of the list of the shipped checks.
            let last = text
                .match_indices(".It Ic [plugins.")
                .last()
                .map(|(i, _)| i)
                .unwrap_or_else(|| panic!("{}: no list of plugin tables", man.display()));
            let end = last + text[last..].find("\n.El\n").expect("the list ends") + 1;
            format!("{}{}\n{}", &text[..end], lines.join("\n"), &text[end..])
        });
    settle(&man, &text, &want, update);
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Writes `want` under UPDATE=1, else fails when the file is not `want`.
fn settle(path: &Path, text: &str, want: &str, update: bool) {
    if text == want {
        return;
    }
    if update {
        std::fs::write(path, want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let first = text
        .lines()
        .zip(want.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(text.lines().count().min(want.lines().count()));
    panic!(
        "{}: the settings shown differ from the declaration from line {}:\n  now:  {:?}\n  made: \
         {:?}\nRewrite with UPDATE=1 cargo test --test settings (in the plugin's crate)",
        path.display(),
        first + 1,
        text.lines().nth(first).unwrap_or(""),
        want.lines().nth(first).unwrap_or(""),
    );
}

/// `text` with the lines after the line `header` that `part_of` holds replaced by `lines`
/// (the header itself is `lines[0]`).
fn replace_block(
    text: &str,
    header: &str,
    part_of: impl Fn(&str) -> bool,
    lines: &[String],
) -> Option<String> {
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let at = all.iter().position(|l| l.trim_end() == header)?;
    let end = at + 1 + all[at + 1..].iter().take_while(|l| part_of(l)).count();
    let mut out: String = all[..at].concat();
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(&all[end..].concat());
    Some(out)
}

/// The table as TOML, each key with its default and its doc line; an unset key commented.
fn toml_block<C: Settings>(plugin: &str) -> String {
    let mut out = format!("[plugins.{plugin}]\n");
    let values = C::default().values();
    let width = C::SETTINGS
        .iter()
        .zip(&values)
        .map(|(s, v)| s.key.len() + v.as_deref().map_or(8, str::len) + 3)
        .max()
        .unwrap_or(0);
    for (s, v) in C::SETTINGS.iter().zip(&values) {
        let line = match v {
            Some(v) => format!("{} = {v}", s.key),
            None => format!("# {} (unset)", s.key),
        };
        out.push_str(&format!("{line:width$}  # {}\n", s.doc.trim()));
    }
    out
}

/// The settings part of the check's docs page.
fn docs_region<C: Settings>(plugin: &str) -> String {
    let mut out = format!(
        "{DOCS_BEGIN}\n\n```toml\n{}```\n\n",
        toml_block::<C>(plugin)
    );
    out.push_str("| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n");
    for (s, v) in C::SETTINGS.iter().zip(C::default().values()) {
        let rules: Vec<String> = s.rules.iter().map(|r| r.describe()).collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            s.key,
            s.kind,
            v.map_or("unset".into(), |v| format!("`{v}`")),
            if rules.is_empty() {
                "any".into()
            } else {
                rules.join(", ")
            },
            s.doc.trim().replace('|', "\\|"),
        ));
    }
    out.push('\n');
    out.push_str(DOCS_END);
    out
}

/// The check's section of the packaged conffile: its header and each key commented out with
/// its default.
fn conffile_lines<C: Settings>(plugin: &str) -> Vec<String> {
    let mut out = vec![format!("#[plugins.{plugin}]")];
    for (s, v) in C::SETTINGS.iter().zip(C::default().values()) {
        out.push(match v {
            Some(v) => format!("#{} = {v}", s.key),
            None => format!("## {}: unset by default", s.key),
        });
    }
    out
}

/// The check's entry in zpulse.toml(5): its table and its keys.
fn man_lines<C: Settings>(plugin: &str) -> Vec<String> {
    let mut out = vec![format!(".It Ic [plugins.{plugin}]")];
    let mut line = String::from(".Ic");
    let n = C::SETTINGS.len();
    for (i, s) in C::SETTINGS.iter().enumerate() {
        let word = format!(" {}{}", s.key, if i + 1 == n { " ." } else { " ," });
        if line.len() + word.len() > 80 && line != ".Ic" {
            out.push(std::mem::replace(&mut line, String::from(".Ic")));
        }
        line.push_str(&word);
    }
    out.push(line);
    out
}

/// The same for one of the agent's own tables (`[history]`): its ```toml block in each of
/// `sources` (Rust files: in their `//!` or `///` doc comments; Markdown pages) and its
/// commented block in the packaged `zpulse.toml`.
pub fn assert_agent_table_documented<C>(table: &str, sources: &[&str])
where
    C: Serialize + DeserializeOwned + Default + PartialEq + Debug,
{
    let root = crate::workspace();
    let read = |rel: &str| {
        std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    };
    let header = format!("[{table}]");
    let mut places: Vec<(String, Option<String>)> = sources
        .iter()
        .map(|rel| {
            let text = read(rel);
            let text = if rel.ends_with(".rs") {
                text.lines()
                    .filter_map(|l| {
                        let l = l.trim_start();
                        l.strip_prefix("//!").or_else(|| l.strip_prefix("///"))
                    })
                    .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
                    .collect()
            } else {
                text
            };
            (rel.to_string(), fenced(&text, &header))
        })
        .collect();
    places.push((
        "packaging/conf/zpulse.toml".to_string(),
        commented(&read("packaging/conf/zpulse.toml"), &header),
    ));
    assert_blocks::<C>(&header, places);
}

/// Each block of `places` against `C::default()`.
fn assert_blocks<C>(header: &str, places: Vec<(String, Option<String>)>)
where
    C: Serialize + DeserializeOwned + Default + PartialEq + Debug,
{
    let defaults = toml::Value::try_from(C::default()).expect("the defaults serialize");
    let defaults = defaults.as_table().expect("a table");
    for (place, block) in places {
        let block = block.unwrap_or_else(|| panic!("{place}: no {header} block"));
        let shown: toml::Table = toml::from_str(&block)
            .unwrap_or_else(|e| panic!("{place}: {header} is not TOML: {e}\n{block}"));
        // Unknown keys and wrong types are refused by the plugin's own deserializer.
        let _: C = toml::from_str(&block)
            .unwrap_or_else(|e| panic!("{place}: {header} is refused by the plugin: {e}"));
        let mut missing: Vec<&String> = defaults
            .keys()
            .filter(|k| !shown.contains_key(*k))
            .collect();
        missing.sort();
        assert!(
            missing.is_empty(),
            "{place}: {header} does not show {missing:?}"
        );
        // Keys whose default is none (absent from the serialized defaults) may show an
        // example; every other key must show the default itself.
        let mut with_defaults = shown.clone();
        with_defaults.retain(|k, _| defaults.contains_key(k));
        let as_shown: C = toml::Value::Table(with_defaults)
            .try_into()
            .unwrap_or_else(|e| panic!("{place}: {e}"));
        assert_eq!(
            as_shown,
            C::default(),
            "{place}: {header} differs from the code's defaults"
        );
    }
}

/// The lines of a ```toml fence that starts with `header`, without the header.
fn fenced(text: &str, header: &str) -> Option<String> {
    let mut lines = text.lines().skip_while(|l| l.trim() != "```toml");
    lines.next()?;
    let mut rest: Vec<&str> = lines.collect();
    loop {
        let first = rest.first()?.trim();
        if first == header {
            let body: Vec<&str> = rest[1..]
                .iter()
                .take_while(|l| l.trim() != "```")
                .copied()
                .collect();
            return Some(body.join("\n"));
        }
        // Not this fence: look for the next one.
        let next = rest.iter().position(|l| l.trim() == "```toml")?;
        rest = rest[next + 1..].to_vec();
    }
}

/// The commented-out `#key = value` lines after `#header` in the conffile, uncommented.
fn commented(text: &str, header: &str) -> Option<String> {
    let start = text
        .lines()
        .position(|l| l.trim() == format!("#{header}"))?;
    let body: Vec<&str> = text
        .lines()
        .skip(start + 1)
        .take_while(|l| l.starts_with('#') && l.contains(" = "))
        .map(|l| &l[1..])
        .collect();
    Some(body.join("\n"))
}

/// The window settings' one rule (`zpulse_proto::sdk::stats::check_window`,
/// docs/plugin-authoring.md): `window_samples = 0` is no limit by count and is accepted; a cap
/// below `min_samples` is refused, naming both settings; a `window` of 0 s, which would drop
/// each observation as soon as it is in and so never judge, is refused. `C` is built from TOML
/// the way the agent hands it a `[plugins.NAME]` table.
pub fn assert_window_rules<C>(min_samples: u64)
where
    C: zpulse_proto::sdk::Check,
{
    // As the SDK validates a table: the declared rules, then the check's `build`.
    let build = |toml_text: &str| {
        let config: C::Config = toml::from_str(toml_text)
            .unwrap_or_else(|e| panic!("{}: {toml_text:?} is not a config: {e}", C::NAME));
        <C as zpulse_proto::sdk::Plugin>::validate(config)
    };
    let unlimited = format!("window_samples = 0\nmin_samples = {min_samples}");
    if let Err(e) = build(&unlimited) {
        panic!(
            "{}: window_samples = 0 (no limit) was refused: {e}",
            C::NAME
        );
    }
    let too_few = format!(
        "window_samples = {}\nmin_samples = {min_samples}",
        min_samples - 1
    );
    let err = match build(&too_few) {
        Ok(()) => panic!(
            "{}: {too_few:?} was accepted: it could never judge",
            C::NAME
        ),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("window_samples") && err.contains("min_samples"),
        "{}: {err}",
        C::NAME
    );
    match build("window = \"0s\"") {
        Ok(()) => panic!(
            "{}: window = \"0s\" was accepted: it could never judge",
            C::NAME
        ),
        Err(e) => assert!(
            e.to_string().starts_with("window: must be longer than 0 s"),
            "{}: {e}",
            C::NAME
        ),
    }
}
