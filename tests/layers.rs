//! The agent's layers point one way (ARCHITECTURE.md, "Layers point one way"): each module of
//! `agent/src` listed in [`LAYERS`] imports, of the rest of the crate, only `base` and the
//! modules listed beside it. The scan reads every `crate::…` and `super::…` path of the
//! module's code (comments and test code left out), so a new import that points up fails
//! here with the file and line that wrote it.

use std::path::{Path, PathBuf};

/// A layer, and what it may import besides itself and `base`. `base` may import nothing.
const LAYERS: &[(&str, &[&str])] = &[
    ("base", &[]),
    // Sinks get readings, events and settings handed to them; they never reach into the
    // daemon, the plugin host or the live system.
    ("sinks", &[]),
    ("history", &[]),
    // The config file's parser reads the sinks', the history's and the event reader's own
    // settings types; none of them reads the config.
    ("config", &["sinks", "history", "sources"]),
];

/// One import of another top-level module: (line, the module).
fn imports(module_path: &[String], code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code_lines(code) {
        let mut rest = line.as_str();
        while let Some(at) = next_path(rest) {
            let tail = &rest[at..];
            if let Some(after) = tail.strip_prefix("crate::") {
                for name in first_segments(after) {
                    out.push((n, name));
                }
            } else {
                // `super::super::x` from `sinks::forward::conn` is `sinks::x`; past the
                // crate root it is a top-level module.
                let mut up = 0;
                let mut after = tail;
                while let Some(next) = after.strip_prefix("super::") {
                    up += 1;
                    after = next;
                }
                if up >= module_path.len() {
                    for name in first_segments(after) {
                        out.push((n, name));
                    }
                }
            }
            rest = &tail[1..];
        }
    }
    out
}

/// Where the next `crate::` or `super::` path starts in `text` (at a word boundary).
fn next_path(text: &str) -> Option<usize> {
    let mut from = 0;
    loop {
        let at = [text[from..].find("crate::"), text[from..].find("super::")]
            .into_iter()
            .flatten()
            .min()?
            + from;
        let boundary = at == 0 || {
            let c = text[..at].chars().next_back().unwrap();
            !(c.is_alphanumeric() || c == '_' || c == ':')
        };
        if boundary {
            return Some(at);
        }
        from = at + 1;
    }
}

/// The module names a path's first segment gives: `daemon::log` → daemon; `{plugins::Level,
/// base}` → plugins, base.
fn first_segments(path: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    match path.strip_prefix('{') {
        Some(group) => {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            group
                .split(',')
                .map(ident)
                .filter(|s| !s.is_empty())
                .collect()
        }
        None => vec![ident(path)]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect(),
    }
}

/// The lines of `code` that are code: comments cut off, and every item under `#[cfg(test)]`
/// (a test module, a helper for tests) left out. Numbered from 1.
fn code_lines(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut lines = code.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            // Skip the item: to its `;`, or to the brace that closes it.
            let mut depth = 0i64;
            let mut opened = false;
            for (_, item) in lines.by_ref() {
                let item = without_comment(item);
                depth += item.matches('{').count() as i64 - item.matches('}').count() as i64;
                opened |= item.contains('{');
                if (opened && depth <= 0) || (!opened && item.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        out.push((n + 1, without_comment(line).to_string()));
    }
    out
}

fn without_comment(line: &str) -> &str {
    match line.find("//") {
        Some(at) => &line[..at],
        None => line,
    }
}

/// The module path of a file below `agent/src`: `sinks/forward/conn.rs` → sinks, forward,
/// conn; `sinks/forward/mod.rs` → sinks, forward.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether the file is test code as a whole: `tests.rs`, or anything in a `tests` folder.
fn is_test_file(rel: &Path) -> bool {
    rel.file_name().is_some_and(|n| n == "tests.rs") || rel.iter().any(|p| p == "tests")
}

#[test]
fn each_layer_imports_only_what_is_below_it() {
    let src = zpulse_tests::workspace().join("agent/src");
    let mut broken = Vec::new();
    let mut scanned = 0;
    for (layer, may) in LAYERS {
        let mut files = Vec::new();
        rust_files(&src.join(layer), &mut files);
        assert!(!files.is_empty(), "agent/src/{layer} holds no source");
        for file in files {
            let rel = file.strip_prefix(&src).unwrap();
            if is_test_file(rel) {
                continue;
            }
            scanned += 1;
            let code = std::fs::read_to_string(&file).unwrap();
            for (line, module) in imports(&module_path(rel), &code) {
                let allowed = module == *layer || module == "base" && *layer != "base";
                if !allowed && !may.contains(&module.as_str()) {
                    broken.push(format!(
                        "agent/src/{}:{line}: {layer} imports {module}",
                        rel.display()
                    ));
                }
            }
        }
    }
    assert!(scanned >= 20, "the scan found the layers ({scanned} files)");
    assert!(
        broken.is_empty(),
        "{} imports point up:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn the_scan_finds_every_form_of_import_and_skips_comments_and_tests() {
    let code = "use crate::daemon::log;\n\
                use crate::{plugins::Level, base::clock};\n\
                // crate::sources::System in a comment\n\
                let x = super::super::cli::run();\n\
                let y = super::spec::Thing;\n\
                fn f() { crate::report::text() }\n\
                #[cfg(test)]\n\
                mod tests {\n\
                    use crate::capture::load;\n\
                    fn g() { if true { crate::daemon::x(); } }\n\
                }\n\
                #[cfg(test)]\n\
                use crate::sources::root::make_fifo;\n\
                let z = mycrate::history::X;\n";
    let path: Vec<String> = ["sinks", "forward"].map(String::from).into();
    let found: Vec<(usize, String)> = imports(&path, code);
    let found: Vec<(usize, &str)> = found.iter().map(|(n, m)| (*n, m.as_str())).collect();
    assert_eq!(
        found,
        [
            (1, "daemon"),
            (2, "plugins"),
            (2, "base"),
            (4, "cli"),
            (6, "report")
        ]
    );
    assert_eq!(
        module_path(Path::new("sinks/forward/mod.rs")),
        ["sinks", "forward"]
    );
    assert!(is_test_file(Path::new(
        "sinks/prometheus/exposition/tests.rs"
    )));
}
