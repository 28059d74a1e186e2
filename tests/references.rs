//! Every file a source comment or a doc names is in the repository: a newcomer can follow each
//! reference. The tree's text files (code, docs, scripts, man pages; not the captures' data)
//! are scanned for paths below the repository's top-level directories (`docs/zfs-sources.md`,
//! `plugins/template/src/lib.rs`) and for relative paths (`../plugins/template`), and for the
//! names of documents that lived outside the repository and that a clone does not have.

use std::path::{Path, PathBuf};

/// Top-level directories of the repository; a path starting with one is a reference.
const TOP: &[&str] = &[
    "agent/",
    "proto/",
    "plugins/",
    "collector/",
    "tests/",
    "docs/",
    "packaging/",
    "fuzz/",
];

/// What lives beside a checkout on purpose, with why; a reference to anything else outside
/// the tree is broken.
const BESIDE_THE_CHECKOUT: &[(&str, &str)] = &[
    (
        "../shared/lab",
        "the lab VM's image builder and runner, kept on the lab host (tests/lab/record.sh)",
    ),
    (
        "node_modules",
        "the npm packages tests/run installs for the Node.js peers",
    ),
];

/// Documents that were never part of the repository: citing them sends a reader nowhere.
const OUTSIDE: &[&str] = &[
    "design.md",
    "zfs-internals.md",
    "transport-and-crates.md",
    "peers.md",
    "freebsd-build.md",
    "shared/docs",
    "the brief",
];

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '+')
}

/// The paths `text` names: each maximal run of path characters that starts (after any
/// `../`) with a top-level directory, or with `../`, without its trailing punctuation. A path
/// cut at a placeholder (`docs/checks/<check>.md`, `plugins/{name}`, `tests/plugins/*`) keeps
/// only its literal head, which must exist too.
fn references(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        let boundary = i == 0 || !is_path_char(chars[i - 1].1);
        if !(boundary && is_path_char(c)) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && is_path_char(chars[j].1) {
            j += 1;
        }
        let end = chars.get(j).map_or(text.len(), |c| c.0);
        let word = literal_head(text[start..end].trim_end_matches(['.', '-', '/']));
        let bare = word.trim_start_matches("../");
        let relative = word.starts_with("../");
        let rooted = TOP.iter().any(|t| bare.starts_with(t));
        // `../` alone, `..`, `../x` written as an example of a path: only real names.
        let named = bare.contains('/') || bare.contains('.');
        if (rooted || (relative && named)) && !bare.is_empty() {
            out.push(word.to_string());
        }
        i = j;
    }
    out
}

/// `path` up to its first placeholder component, an upper-case word such as `SCENARIO` or
/// `DIR` (`tests/fixtures/lab/SCENARIO/` names the directory a scenario fills).
fn literal_head(path: &str) -> &str {
    let mut end = 0;
    for part in path.split_inclusive('/') {
        let name = part.trim_end_matches('/');
        let placeholder = name.len() >= 2
            && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            && !["README", "LICENSE"].contains(&name);
        if placeholder {
            break;
        }
        end += part.len();
    }
    path[..end].trim_end_matches('/')
}

/// Does `reference`, found in `file`, name something that exists? A path may be written
/// relative to the repository, to its crate (`tests/replay.rs` in a plugin, `../tests/…` from
/// `CARGO_MANIFEST_DIR`) or to the file's own directory: any directory enclosing the file.
fn exists(root: &Path, file: &Path, reference: &str) -> bool {
    if BESIDE_THE_CHECKOUT
        .iter()
        .any(|(p, _)| reference.contains(p))
    {
        return true;
    }
    file.ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(root))
        .any(|dir| dir.join(reference).exists())
}

fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            // Build output, other repositories' files, and the captures' raw data (their
            // READMEs and provenance notes are scanned below).
            if name.starts_with('.') || ["target", "node_modules"].contains(&name.as_str()) {
                continue;
            }
            if path.ends_with("tests/fixtures") {
                fixture_docs(&path, out);
                continue;
            }
            text_files(&path, out);
        } else if is_text_source(&name) {
            out.push(path);
        }
    }
}

fn is_text_source(name: &str) -> bool {
    let ext = name.rsplit('.').next().unwrap_or("");
    matches!(
        ext,
        "rs" | "md" | "sh" | "toml" | "h" | "c" | "js" | "5" | "8" | "py"
    ) || name == "run"
        || name == "Makefile"
}

fn fixture_docs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            fixture_docs(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// An issue tracker's number cited in a line of code or a script (the word, an optional `s`
/// and `#`, then digits), lower-cased: what the number meant is lost on whoever reads the code.
fn tracker_number(lower: &str) -> Option<&str> {
    lower.match_indices("issue").find_map(|(at, _)| {
        let word_start = at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric();
        let rest = &lower[at + "issue".len()..];
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        let after = rest.trim_start_matches(' ');
        let after = after.strip_prefix('#').unwrap_or(after);
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        (word_start && digits > 0).then(|| &lower[at..lower.len() - after.len() + digits])
    })
}

#[test]
fn every_file_a_comment_or_doc_names_exists() {
    let root = zpulse_tests::workspace();
    let mut files = Vec::new();
    text_files(&root, &mut files);
    assert!(
        files.len() > 200,
        "the scan found the tree ({} files)",
        files.len()
    );
    let mut broken = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        // This test names the outside documents on purpose; the provenance notes cite paths
        // in the upstream repositories the external captures came from.
        if rel == "tests/references.rs" {
            continue;
        }
        let upstream_paths = rel == "tests/fixtures/external/PROVENANCE.md";
        let code = !rel.ends_with(".md");
        for (n, line) in text.lines().enumerate() {
            // Case-insensitive: "The brief's" at the start of a sentence is the same citation.
            let lower = line.to_lowercase();
            for name in OUTSIDE {
                if lower.contains(name) {
                    broken.push(format!(
                        "{rel}:{}: cites {name:?}, which is not in the repository",
                        n + 1
                    ));
                }
            }
            if code && let Some(cited) = tracker_number(&lower) {
                broken.push(format!(
                    "{rel}:{}: cites {cited:?}; say what happened instead (a tracker's numbers \
                     mean nothing to a reader of the code)",
                    n + 1
                ));
            }
            for reference in references(line) {
                // The plugin guide walks through the template: its paths are that crate's
                // (`tests/seed-after.jsonl`, `../tests/…` from its `src/`).
                let in_template = rel == "docs/plugin-authoring.md"
                    && exists(&root, &root.join("plugins/template/src/lib.rs"), &reference);
                if !upstream_paths && !in_template && !exists(&root, file, &reference) {
                    broken.push(format!("{rel}:{}: {reference} does not exist", n + 1));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "{} broken references:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn tracker_numbers_are_found_in_any_case() {
    // The cited lines are put together here, so that this file cites no number itself.
    let (word, words) = ("issue", "issues");
    let quick = format!("# the quick mode ({word} #{}): one run", 14);
    assert_eq!(tracker_number(&quick), Some(format!("{word} #14").as_str()));
    let two = format!("see {words} {} and {}", 5, 6);
    assert_eq!(tracker_number(&two), Some(format!("{words} 5").as_str()));
    let upper = format!("I{} {}", &word[1..], 3).to_lowercase();
    assert_eq!(tracker_number(&upper), Some(format!("{word} 3").as_str()));
    assert_eq!(tracker_number("a source issue in the snapshot"), None);
    assert_eq!(tracker_number(&format!("source{word} {}", 4)), None);
    assert_eq!(tracker_number("color:#222"), None);
}

#[test]
fn the_scanner_finds_rooted_relative_and_cut_paths() {
    let found = references(
        "see docs/zfs-sources.md, `../plugins/template/src/lib.rs`, docs/checks/<check>.md and \
         tests/fixtures/lab/SCENARIO/; not module/zfs/arc.c, nor 1.5/2 or ../",
    );
    assert_eq!(
        found,
        [
            "docs/zfs-sources.md",
            "../plugins/template/src/lib.rs",
            "docs/checks",
            "tests/fixtures/lab"
        ]
    );
    let root = zpulse_tests::workspace();
    let here = root.join("docs/plugin-authoring.md");
    assert!(exists(&root, &here, "../plugins/template/src/lib.rs"));
    assert!(!exists(&root, &here, "docs/design.md"));
    // Crate-relative, as a plugin's unit tests name its replay tests.
    let unit = root.join("plugins/arc-sizing/src/tests.rs");
    assert!(exists(&root, &unit, "tests/replay.rs"));
    assert!(!exists(&root, &unit, "tests/nothing.rs"));
}
