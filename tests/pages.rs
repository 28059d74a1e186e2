//! The example findings a check's page shows that only its unit tests can produce (the seed's
//! server, replayed from its figures in `src/tests.rs`: no capture of it exists, so no
//! command prints them). The unit test that makes such a finding holds the page to it, as
//! `tests/doc_outputs.rs` holds the pages' commands to what the binaries print.

use zpulse_proto::Event;

/// Asserts that one ```` ```text ```` block of `page` (a path from the workspace root) shows
/// `events`, one after the other, each as `zpulse replay --findings` prints a finding:
/// `[severity state] check subject: summary`, then `advice: …` when it has advice. Whitespace
/// is collapsed on both sides, so the page may wrap and indent the lines as it likes; nothing
/// may be left out (no `…`).
pub fn assert_page_shows<'a>(page: &str, events: impl IntoIterator<Item = &'a Event>) {
    let path = crate::workspace().join(page);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{page}: {e}"));
    let lines: Vec<String> = events.into_iter().flat_map(finding_lines).collect();
    assert!(!lines.is_empty(), "{page}: no finding to look for");
    let wanted = collapse(&lines.join(" "));
    let blocks = text_blocks(&text);
    assert!(
        blocks.iter().any(|b| collapse(b).contains(&wanted)),
        "{page}: no ```text block shows these findings (wrap them as you like):\n\n{}\n\n\
         The page's ```text blocks:\n\n{}",
        lines.join("\n"),
        blocks.join("\n----\n")
    );
}

/// A finding's lines as the agent's text output prints them (`Events` list, without the
/// figures' `data:` line, which the pages leave out).
fn finding_lines(e: &Event) -> Vec<String> {
    let state = e.state.map_or(e.kind.as_str(), |s| s.as_str());
    let mut lines = vec![format!(
        "[{} {state}] {} {}: {}",
        e.severity.as_str(),
        e.check,
        e.subject,
        e.summary
    )];
    if let Some(advice) = &e.advice {
        lines.push(format!("advice: {advice}"));
    }
    lines
}

/// The contents of every ```` ```text ```` block of a Markdown page.
fn text_blocks(page: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut open: Option<(bool, Vec<&str>)> = None;
    for line in page.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => open = Some((info.trim() == "text", Vec::new())),
            (Some(_), Some(_)) => {
                if let Some((true, body)) = open.take() {
                    blocks.push(body.join("\n"));
                }
            }
            (Some((_, body)), None) => body.push(line),
            (None, None) => {}
        }
    }
    blocks
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use zpulse_proto::event::{Severity, State};

    #[test]
    fn only_text_blocks_are_read() {
        let page = "a\n```text\none\n  two\n```\n```console\n$ x\n```\n```\nbare\n```\n";
        assert_eq!(text_blocks(page), ["one\n  two"]);
    }

    #[test]
    fn a_finding_is_its_header_and_advice() {
        let mut e = Event::finding("c", State::Raised, Severity::Warning, "s", "it is so");
        assert_eq!(finding_lines(&e), ["[warning raised] c s: it is so"]);
        e.advice = Some("do this".into());
        assert_eq!(
            finding_lines(&e),
            ["[warning raised] c s: it is so", "advice: do this"]
        );
        assert_eq!(collapse(" a\n  b  c\n"), "a b c");
    }
}
