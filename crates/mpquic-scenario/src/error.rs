//! Errors that say where: a field path (`flows.3.from`, the spelling sweep axes use) while
//! checking a parsed scenario, turned into `file:line:column` by [`locate`] against the text.

use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// A scenario could not be read or makes no sense.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    /// TOML syntax, an unknown key or a value of the wrong form, with the position in the text
    /// when the parser knows it.
    #[error("{message}")]
    Toml {
        /// What is wrong.
        message: String,
        /// Byte range in the text.
        span: Option<Range<usize>>,
    },
    /// A value that makes no sense, at a field path of the document (`flows.3.from`; empty for
    /// the whole document).
    #[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
    At {
        /// Dotted keys and array indices from the root.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Something that makes no sense, found while building (no position).
    #[error("{0}")]
    Invalid(String),
    /// An error placed in its file.
    #[error("{file}:{line}:{column}: {message}")]
    Located {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (characters).
        column: usize,
        /// What is wrong, and at which field.
        message: String,
    },
}

impl From<toml::de::Error> for ScenarioError {
    fn from(e: toml::de::Error) -> Self {
        ScenarioError::Toml { message: e.message().trim().to_string(), span: e.span() }
    }
}

/// An [`ScenarioError::Invalid`].
pub fn invalid(message: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid(message.into())
}

/// An [`ScenarioError::At`] the field `path`.
pub fn at(path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError::At { path: path.into(), message: message.into() }
}

/// 1-based line and column of byte `offset` in `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The byte range of the value at a dotted `path` in the TOML `text`, or of the deepest part
/// of the path that the text has (a field set by a default or a sweep is not written).
pub fn span_of(text: &str, path: &str) -> Option<Range<usize>> {
    let root = DeTable::parse(text).ok()?;
    let mut span = None;
    let mut table: Option<&DeTable> = Some(root.get_ref());
    let mut value: Option<&Spanned<DeValue>> = None;
    for key in path.split('.').filter(|k| !k.is_empty()) {
        let next = match (table, value.map(Spanned::get_ref)) {
            (Some(t), _) => t.iter().find(|(k, _)| k.get_ref().as_ref() == key).map(|(_, v)| v),
            (None, Some(DeValue::Array(items))) => {
                key.parse::<usize>().ok().and_then(|i| items.get(i))
            }
            _ => None,
        };
        let Some(next) = next else { break };
        span = Some(next.span());
        value = Some(next);
        table = match next.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => None,
        };
    }
    span
}

/// Serde places errors inside a tagged table (a topology, a workload) at the table; move an
/// unknown key, or a value the message quotes, to its own place inside that table.
fn refine(text: &str, span: Option<Range<usize>>, message: &str) -> Option<Range<usize>> {
    let span = span?;
    let quoted = message.split('`').nth(1).unwrap_or_default();
    let unknown = message.starts_with("unknown field `");
    if quoted.is_empty() {
        return Some(span);
    }
    // The table's lines: from its start up to the next table header.
    let mut offset = span.start;
    for (i, line) in text.get(span.start..)?.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_start();
        if i > 0 && trimmed.starts_with('[') {
            break;
        }
        let found = if unknown {
            trimmed
                .strip_prefix(quoted)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
                .then(|| line.len() - trimmed.len())
        } else {
            line.find(&format!("\"{quoted}\""))
        };
        if let Some(at) = found {
            return Some(offset + at..offset + at + quoted.len());
        }
        offset += line.len();
    }
    Some(span)
}

/// `e` placed in `file` (whose text is `text`): at the parser's span, or at the field its path
/// names (the file's start if neither is known).
pub fn locate(e: ScenarioError, file: &str, text: &str) -> ScenarioError {
    let (span, message) = match e {
        ScenarioError::Toml { span, message } => (refine(text, span, &message), message),
        ScenarioError::At { ref path, .. } => (span_of(text, path), e.to_string()),
        ScenarioError::Invalid(message) => (None, message),
        located @ ScenarioError::Located { .. } => return located,
    };
    let (line, column) = line_column(text, span.map_or(0, |s| s.start));
    ScenarioError::Located { file: file.to_string(), line, column, message }
}
