//! Every command output the README and `docs/` show is what the real binary prints today.
//!
//! A ```` ```console ```` block is a transcript: each line starting with `$ ` is a command
//! (`zpulse …` or `zpulse-collector …`, run from the workspace root on the fixtures it names),
//! and the lines up to the next command are what it printed, standard output and standard
//! error together as a terminal shows them, then `[exit status N]` when it was not 0. A block
//! whose last line is `…` shows only the lines before it: the output's beginning must match
//! them. An argument `target/release/FILE` means the file built beside this test's binaries
//! (`libzpulse_checks.so`, the shipped checks; `libzpulse_plugin_template.so`, the template
//! the plugin guide walks through); where the output names that file, the page shows it as
//! typed, `target/release/FILE`, as it is printed when the command runs from the workspace root
//! with the default target directory.
//!
//! `UPDATE=1 cargo test -p zpulse-tests --test doc_outputs` writes what the binaries print into
//! the pages (keeping each cut block's length); read the diff before committing it.
//!
//! So that no output escapes this, every fenced block of those pages names its language: a
//! bare ```` ``` ```` fence is refused. (A check's example findings that only its unit tests
//! can make, from synthetic figures, are ```` ```text ```` blocks that those tests hold to
//! what they make: `zpulse_tests::pages`.)

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use zpulse_tests::workspace;

/// The pages whose blocks are checked: the README and every Markdown page under `docs/`.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out
}

/// One command of a transcript: where its output lines are in the page, and what they say.
struct Shown {
    /// Line index of the `$ ` line.
    command_line: usize,
    command: String,
    /// The output lines shown (without a final `…`).
    output: Vec<String>,
    /// Whether the block shows only the output's beginning.
    cut: bool,
    /// Line index just past the shown output (the `…` included).
    end: usize,
}

/// The commands of every ```console block of `text`, and the lines of bare fences.
fn transcripts(text: &str) -> (Vec<Shown>, Vec<usize>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut shown = Vec::new();
    let mut bare = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i;
        let close = (i + 1..lines.len())
            .find(|&j| lines[j].trim_start().starts_with("```"))
            .unwrap_or(lines.len());
        if info.trim().is_empty() {
            bare.push(start + 1);
        }
        if info.trim() == "console" {
            let mut j = start + 1;
            while j < close {
                let Some(command) = lines[j].strip_prefix("$ ") else {
                    panic!("line {}: a console block starts with a `$ ` command", j + 1);
                };
                let first = j + 1;
                let mut end = first;
                while end < close && !lines[end].starts_with("$ ") {
                    end += 1;
                }
                let mut output: Vec<String> =
                    lines[first..end].iter().map(|l| l.to_string()).collect();
                let cut = output.last().is_some_and(|l| l == "…");
                if cut {
                    output.pop();
                }
                shown.push(Shown {
                    command_line: j,
                    command: command.to_string(),
                    output,
                    cut,
                    end,
                });
                j = end;
            }
        }
        i = close + 1;
    }
    (shown, bare)
}

/// The words of a command line: split at spaces, with '…' and "…" quoting.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote = None;
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, ' ') => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "{command}: an unclosed quote");
    if in_word {
        out.push(word);
    }
    out
}

/// Runs `command` from `root` with the binaries of `profile`; its output as a terminal
/// shows it (both streams through one pipe, in the order written), and the exit status line.
fn run(command: &str, root: &Path, profile: &Path) -> Vec<String> {
    let argv = words(command);
    let program = match argv.first().map(String::as_str) {
        Some(p @ ("zpulse" | "zpulse-collector")) => profile.join(p),
        other => panic!("{command}: only zpulse and zpulse-collector are run, not {other:?}"),
    };
    let args = argv[1..]
        .iter()
        .map(|a| match a.strip_prefix("target/release/") {
            Some(file) => profile.join(file).into_os_string(),
            None => a.into(),
        });
    let (reader, writer) = rustix::pipe::pipe().expect("a pipe");
    let writer2 = writer.try_clone().expect("the pipe's other end, twice");
    // The command is dropped once started, and with it this process's copies of the writing
    // end: reading then ends when the child's do.
    let mut child = {
        let mut command = Command::new(&program);
        command
            .args(args)
            .current_dir(root)
            // The journald priority prefixes are for systemd's stream, not for a terminal.
            .env_remove("JOURNAL_STREAM")
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer2));
        command
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", program.display()))
    };
    let mut bytes = Vec::new();
    std::fs::File::from(reader)
        .read_to_end(&mut bytes)
        .expect("reading the output");
    let status = child.wait().expect("waiting for the command");
    let text = String::from_utf8(bytes).unwrap_or_else(|e| panic!("{command}: not UTF-8: {e}"));
    // This test's target directory is wherever it was built; the page's is the default one.
    let text = text.replace(&format!("{}/", profile.display()), "target/release/");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    match status.code() {
        Some(0) => {}
        Some(n) => lines.push(format!("[exit status {n}]")),
        None => panic!("{command}: killed by a signal ({status})"),
    }
    lines
}

#[test]
fn every_output_shown_is_what_the_binaries_print() {
    let root = workspace();
    let profile = zpulse_tests::build_into_test_target(&[
        zpulse_tests::CHECKS_PACKAGE,
        "zpulse-plugin-template",
    ]);
    zpulse_tests::build_bin("zpulse-collector", "zpulse-collector");
    let update = std::env::var_os("UPDATE").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut commands = 0;
    for page in pages(&root) {
        let rel = page.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let (shown, bare) = transcripts(&text);
        for line in bare {
            failures.push(format!(
                "{rel}:{line}: a fence without a language: say `console` for a command and its \
                 output (then it is checked here), else what it holds (`toml`, `sh`, `text`)"
            ));
        }
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        // From the last block up, so that a rewritten block does not move those above it.
        for s in shown.iter().rev() {
            commands += 1;
            let mut printed = run(&s.command, &root, &profile);
            if s.cut {
                printed.truncate(s.output.len());
            }
            if printed == s.output {
                continue;
            }
            if update {
                let mut block = printed;
                if s.cut {
                    block.push("…".into());
                }
                lines.splice(s.command_line + 1..s.end, block);
            } else {
                failures.push(format!(
                    "{rel}:{}: `{}` prints\n{}\n-- but the page shows --\n{}",
                    s.command_line + 1,
                    s.command,
                    printed.join("\n"),
                    s.output.join("\n")
                ));
            }
        }
        if update {
            let mut new = lines.join("\n");
            new.push('\n');
            if new != text {
                std::fs::write(&page, new).unwrap_or_else(|e| panic!("{rel}: {e}"));
                eprintln!("rewrote {rel}");
            }
        }
    }
    assert!(
        commands > 0,
        "no console block found: the pages show no output at all?"
    );
    assert!(
        failures.is_empty(),
        "{} difference(s) (UPDATE=1 rewrites the pages):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn transcripts_are_read_as_documented() {
    let page = "text\n```console\n$ zpulse a 'b c'\none\n$ zpulse-collector x\n1\n2\n…\n```\n```\nbare\n```\n";
    let (shown, bare) = transcripts(page);
    assert_eq!(bare, vec![10]);
    assert_eq!(shown.len(), 2);
    assert_eq!(words(&shown[0].command), ["zpulse", "a", "b c"]);
    assert_eq!(shown[0].output, ["one"]);
    assert!(!shown[0].cut);
    assert_eq!(shown[1].output, ["1", "2"]);
    assert!(shown[1].cut);
    assert_eq!(shown[1].end, 8);
}
