//! Decoding one file into documents: YAML streams (`---`) and JSON streams.

use std::path::Path;

use serde_json::Value;

use super::error::{Location, ManifestError};

/// The encodings a manifest file may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// A YAML stream: documents separated by `---`.
    Yaml,
    /// A stream of JSON values, usually just one.
    Json,
}

impl Format {
    /// `*.yaml`, `*.yml` and `*.json`, case-insensitive; `None` otherwise.
    pub fn of(path: &Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "yaml" | "yml" => Some(Self::Yaml),
            "json" => Some(Self::Json),
            _ => None,
        }
    }
}

/// Decodes `bytes` (the content of `file`) into its non-empty documents,
/// each with the 1-based line it starts on.
pub(crate) fn decode(
    file: &Path,
    bytes: &[u8],
    format: Format,
) -> Result<Vec<(usize, Value)>, ManifestError> {
    let at = |line| Location {
        file: file.to_path_buf(),
        line,
    };
    let text = std::str::from_utf8(bytes).map_err(|error| ManifestError::NotUtf8 {
        at: at(line_at(bytes, error.valid_up_to())),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match format {
        Format::Yaml => {
            decode_yaml(text).map_err(|(line, column, message)| ManifestError::Syntax {
                at: at(line),
                column,
                format: "YAML",
                message,
            })
        }
        Format::Json => {
            decode_json(text).map_err(|(line, column, message)| ManifestError::Syntax {
                at: at(line),
                column,
                format: "JSON",
                message,
            })
        }
    }
}

type SyntaxError = (usize, usize, String);

fn decode_yaml(text: &str) -> Result<Vec<(usize, Value)>, SyntaxError> {
    let mut options = serde_saphyr::Options::default();
    options.with_snippet = false;
    // The default budget suits configuration files; a bundle's CRD can be
    // megabytes. Counts grow with the input, so tie them to its length;
    // the alias, anchor and depth caps stay, and they are what stops a
    // small file from expanding into a huge one.
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = budget.max_documents.max(text.len() / 4);
    budget.max_nodes = budget.max_nodes.max(text.len());
    budget.max_events = budget.max_events.max(text.len().saturating_mul(2));
    options.budget = Some(budget);
    // Empty and null documents are skipped by the parser.
    let documents: Vec<serde_saphyr::Spanned<Value>> =
        serde_saphyr::from_multiple_with_options(text, options).map_err(|error| {
            let (line, column) = error.location().map_or((0, 0), |location| {
                (to_usize(location.line()), to_usize(location.column()))
            });
            (line, column, strip_position(&error.to_string()))
        })?;
    Ok(documents
        .into_iter()
        .map(|document| (to_usize(document.referenced.line()), document.value))
        .collect())
}

fn decode_json(text: &str) -> Result<Vec<(usize, Value)>, SyntaxError> {
    let mut documents = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut end = 0;
    loop {
        // A document starts after the previous one and the whitespace after it.
        let start = end
            + text[end..]
                .bytes()
                .take_while(u8::is_ascii_whitespace)
                .count();
        match stream.next() {
            None => break,
            Some(Ok(value)) => {
                documents.push((line_at(text.as_bytes(), start), value));
                end = stream.byte_offset();
            }
            Some(Err(error)) => {
                let message = strip_position(&error.to_string());
                return Err((error.line(), error.column(), message));
            }
        }
    }
    Ok(documents)
}

/// The 1-based line of byte `offset`.
fn line_at(bytes: &[u8], offset: usize) -> usize {
    let offset = offset.min(bytes.len());
    bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1
}

fn to_usize(number: u64) -> usize {
    usize::try_from(number).unwrap_or(usize::MAX)
}

/// Parsers append " at line L column C"; the error has its own fields.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_skips_empty_documents_and_keeps_lines() {
        let text = "---\n# only a comment\n---\na: 1\n---\n---\nb: 2\n";
        let documents = decode_yaml(text).unwrap();
        let lines: Vec<usize> = documents.iter().map(|d| d.0).collect();
        assert_eq!(lines, [4, 7]);
    }

    #[test]
    fn json_streams_report_each_start_line() {
        let text = "{\"a\": 1}\n\n  {\"b\":\n 2}";
        let documents = decode_json(text).unwrap();
        let lines: Vec<usize> = documents.iter().map(|d| d.0).collect();
        assert_eq!(lines, [1, 3]);
    }

    #[test]
    fn syntax_errors_carry_a_line() {
        let (line, _, message) = decode_yaml("a: 1\nb: [\n").unwrap_err();
        assert!(line >= 2, "line {line}: {message}");
        let (line, _, _) = decode_json("{}\n{\"a\" 1}").unwrap_err();
        assert_eq!(line, 2);
    }
}
