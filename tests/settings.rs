//! One definition per setting: a check's `Config` and its `Default` are the truth, and the
//! three places that show its settings to people — the crate doc, the `docs/checks/` page and
//! the packaged `zpulse.toml` — must name every key with the default value. A plugin's
//! `tests/settings.rs` calls [`assert_documented`]; a difference fails that test.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// The `[plugins.NAME]` TOML blocks of the crate doc, the docs page and the conffile, each
/// compared with `C::default()`: the same keys, and for each key the same value (a key whose
/// default is "none", an `Option`, may be shown with an example value).
pub fn assert_documented<C>(plugin: &str)
where
    C: Serialize + DeserializeOwned + Default + PartialEq + Debug,
{
    let root = crate::workspace();
    let read = |rel: &str| {
        std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    };
    let lib = read(&format!("plugins/{plugin}/src/lib.rs"));
    let doc_lines: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    let page = read(&format!("docs/checks/{plugin}.md"));
    let conf = read("packaging/conf/zpulse.toml");
    let header = format!("[plugins.{plugin}]");
    let places = vec![
        (
            format!("plugins/{plugin}/src/lib.rs (crate doc)"),
            fenced(&doc_lines, &header),
        ),
        (format!("docs/checks/{plugin}.md"), fenced(&page, &header)),
        (
            "packaging/conf/zpulse.toml".to_string(),
            commented(&conf, &header),
        ),
    ];
    assert_blocks::<C>(&header, places);
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
    let build = |toml_text: &str| {
        let config: C::Config = toml::from_str(toml_text)
            .unwrap_or_else(|e| panic!("{}: {toml_text:?} is not a config: {e}", C::NAME));
        C::build(config).map(|_| ())
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
            e.to_string().contains("window must be longer than 0 s"),
            "{}: {e}",
            C::NAME
        ),
    }
}
