//! The command lines and their man pages say the same: every option `--help` lists has a
//! description and is in the man page, every option the man page names is one the binary
//! takes, every command is in both, the pages are clean for `mandoc -T lint -W warning`, and
//! what they render quotes as written (no quote left open or doubled by a macro that took the
//! rest of its line). The man pages are `packaging/man/*`; mandoc is Debian's `mandoc`
//! (installed by `tests/run`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use zpulse_tests::workspace;

/// `program ARGS -h`: the short help, one line per option.
fn help(program: &Path, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .arg("-h")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    assert!(out.status.success(), "{args:?} -h: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The lines of one section of a help text (`Commands:`, `Arguments:`, `Options:`).
fn section<'a>(help: &'a str, title: &str) -> Vec<&'a str> {
    help.lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// The commands a help text lists (without clap's own `help`).
fn commands(help: &str) -> Vec<String> {
    section(help, "Commands:")
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// One option or argument line of a short help: its flags, and whether text follows them.
struct Entry {
    line: String,
    longs: Vec<String>,
    described: bool,
}

fn entries(help: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    for title in ["Arguments:", "Options:"] {
        for line in section(help, title) {
            // `  -v, --verbose  Text`, `      --db <FILE>  Text`, `  <HOST>  Text`: the flags
            // and their values end at the first run of two spaces.
            let body = line.trim_start();
            let (head, text) = body.split_once("  ").unwrap_or((body, ""));
            let longs = head
                .split([' ', ','])
                .filter(|w| w.starts_with("--"))
                .map(str::to_string)
                .collect();
            out.push(Entry {
                line: line.to_string(),
                longs,
                described: !text.trim().is_empty(),
            });
        }
    }
    out
}

/// The options an mdoc page names with `Fl`: on a macro line, each word after `Fl` up to the
/// next macro (`Ar`, `Cm`, `Op`, …) is a flag, `-x` for `x` and `--name` for `-name`;
/// commas and bars between them (`Fl -host , -check`) are punctuation.
fn man_options(page: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in page.lines().filter(|l| l.starts_with('.')) {
        let mut words = line[1..].split_whitespace().peekable();
        while let Some(w) = words.next() {
            if w != "Fl" {
                continue;
            }
            while let Some(&next) = words.peek() {
                if next.chars().next().is_some_and(char::is_uppercase) {
                    break;
                }
                words.next();
                if [",", "|", ".", ";", ")", "("].contains(&next) {
                    continue;
                }
                out.insert(format!("-{next}"));
            }
        }
    }
    out
}

/// The commands an mdoc page lists: the `.It Cm NAME` of its lists.
fn man_commands(page: &str) -> BTreeSet<String> {
    page.lines()
        .filter_map(|l| l.strip_prefix(".It Cm "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(workspace().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Checks one binary against its man page; returns what differs.
fn compare(program: &Path, page_rel: &str) -> Vec<String> {
    let page = read(page_rel);
    let mut problems = Vec::new();
    let top = help(program, &[]);
    let listed = commands(&top);
    assert!(
        !listed.is_empty(),
        "{}: no commands in -h",
        program.display()
    );
    let in_page = man_commands(&page);
    let mut longs = BTreeSet::new();
    for c in &listed {
        if !in_page.contains(c) {
            problems.push(format!("{page_rel}: no `.It Cm {c}` for the command {c}"));
        }
        for e in entries(&help(program, &[c])) {
            if !e.described {
                problems.push(format!("{c} -h: undescribed: {}", e.line.trim()));
            }
            longs.extend(e.longs);
        }
    }
    for c in &in_page {
        if !listed.contains(c) {
            problems.push(format!(
                "{page_rel}: `.It Cm {c}` is no command of the binary"
            ));
        }
    }
    longs.remove("--help");
    let named = man_options(&page);
    for l in &longs {
        if !named.contains(l) {
            problems.push(format!("{page_rel}: never names {l}, which -h lists"));
        }
    }
    for n in named.iter().filter(|n| n.starts_with("--")) {
        if !longs.contains(n) && n != "--help" && n != "--version" {
            problems.push(format!("{page_rel}: names {n}, which no command takes"));
        }
    }
    problems
}

fn binaries() -> (PathBuf, PathBuf) {
    let agent = zpulse_tests::build_into_test_target(&[]).join("zpulse");
    let collector = zpulse_tests::build_bin("zpulse-collector", "zpulse-collector");
    (agent, collector)
}

#[test]
fn help_and_man_pages_name_the_same_options() {
    let (agent, collector) = binaries();
    let mut problems = compare(&agent, "packaging/man/zpulse.8");
    problems.extend(compare(&collector, "packaging/man/zpulse-collector.8"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_duration_option_says_so_in_its_help() {
    // The one grammar is for every option that takes a time span: each says DURATION.
    let (agent, collector) = binaries();
    for (program, command, option) in [
        (&agent, "once", "--interval"),
        (&agent, "capture", "--interval"),
        (&agent, "report", "--interval"),
        (&agent, "report", "--duration"),
        (&agent, "report", "--last"),
        (&agent, "run", "--pace"),
        (&collector, "query", "--since"),
        (&collector, "ack", "--until"),
    ] {
        let h = help(program, &[command]);
        let e = entries(&h)
            .into_iter()
            .find(|e| e.longs.iter().any(|l| l == option))
            .unwrap_or_else(|| panic!("{command} -h: no {option}"));
        assert!(e.line.contains("<DURATION>"), "{command}: {}", e.line);
    }
}

#[test]
fn man_pages_are_lint_clean_and_render_their_quotes() {
    for page in ["zpulse.8", "zpulse.toml.5", "zpulse-collector.8"] {
        let path = workspace().join("packaging/man").join(page);
        let lint = Command::new("mandoc")
            .args(["-T", "lint", "-W", "warning"])
            .arg(&path)
            .output()
            .expect("mandoc (Debian package mandoc) must be installed");
        assert!(
            lint.status.success() && lint.stdout.is_empty() && lint.stderr.is_empty(),
            "{page}: {}{}",
            String::from_utf8_lossy(&lint.stdout),
            String::from_utf8_lossy(&lint.stderr)
        );
        let shown = Command::new("mandoc")
            .args(["-T", "utf8"])
            .arg(&path)
            .output()
            .expect("mandoc");
        assert!(shown.status.success(), "{page}: {shown:?}");
        let text = String::from_utf8(shown.stdout).expect("UTF-8");
        // Rendered paragraphs span lines: count over the whole page, then look for the marks of a
        // macro that swallowed the rest of its line (two closing quotes in a row).
        for (open, close) in [('“', '”'), ('‘', '’')] {
            let opened = text.matches(open).count();
            let closed = text.matches(close).count();
            assert_eq!(opened, closed, "{page}: {open}…{close} unbalanced");
            let doubled = format!("{close}{close}");
            assert!(!text.contains(&doubled), "{page}: {doubled} in\n{text}");
        }
    }
    // TOML values are shown as written in the file: straight quotes.
    let toml_page = String::from_utf8(
        Command::new("mandoc")
            .args(["-T", "utf8"])
            .arg(workspace().join("packaging/man/zpulse.toml.5"))
            .output()
            .expect("mandoc")
            .stdout,
    )
    .expect("UTF-8");
    for value in ["(duration, default \"10s\")", "\"500ms\", \"30s\""] {
        assert!(
            toml_page.contains(value),
            "zpulse.toml(5) does not show {value}"
        );
    }
}

#[test]
fn the_readers_find_what_the_pages_say() {
    let page = ".Op Fl f | -follow\n.It Fl -from Ar time , Fl -to Ar time\n.Fl -host , -check , -limit\n.It Cm once\ntext Fl -no\n";
    let got: Vec<String> = man_options(page).into_iter().collect();
    assert_eq!(
        got,
        [
            "--check", "--follow", "--from", "--host", "--limit", "--to", "-f"
        ]
    );
    assert_eq!(man_commands(page).into_iter().collect::<Vec<_>>(), ["once"]);
    let h =
        "Options:\n  -v, --verbose  Every pair\n      --db <FILE>\n  -h, --help     Print help\n";
    let e = entries(h);
    assert_eq!(e.len(), 3);
    assert_eq!(e[0].longs, ["--verbose"]);
    assert!(e[0].described && !e[1].described && e[2].described);
}
