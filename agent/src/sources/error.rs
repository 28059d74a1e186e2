//! The one error type of every parser: what was being parsed, where, and what was wrong.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What was being parsed: `kstat`, `diskstats`, `devstat`, `geom confxml`, …
    pub what: &'static str,
    /// 1-based line, or byte offset for binary formats, when it helps to find the fault.
    pub at: Option<Location>,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Line(usize),
    Offset(usize),
}

impl ParseError {
    pub fn new(what: &'static str, message: impl Into<String>) -> Self {
        ParseError {
            what,
            at: None,
            message: message.into(),
        }
    }

    pub fn at_line(mut self, line: usize) -> Self {
        self.at = Some(Location::Line(line));
        self
    }

    pub fn at_offset(mut self, offset: usize) -> Self {
        self.at = Some(Location::Offset(offset));
        self
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some(Location::Line(n)) => write!(f, "{} line {}: {}", self.what, n, self.message),
            Some(Location::Offset(n)) => {
                write!(f, "{} at byte {}: {}", self.what, n, self.message)
            }
            None => write!(f, "{}: {}", self.what, self.message),
        }
    }
}

impl std::error::Error for ParseError {}
