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
            let message = match budget_breach(&error) {
                Some(breach) => budget_words(breach),
                None => strip_position(&error.to_string()),
            };
            (line, column, message)
        })?;
    Ok(documents
        .into_iter()
        .map(|document| (to_usize(document.referenced.line()), document.value))
        .collect())
}

/// The budget the parser stopped at, however the error is wrapped.
fn budget_breach(error: &serde_saphyr::Error) -> Option<&serde_saphyr::budget::BudgetBreach> {
    let mut error = error;
    loop {
        match error {
            serde_saphyr::Error::Budget { breach, .. } => return Some(breach),
            serde_saphyr::Error::WithSnippet { error: inner, .. }
            | serde_saphyr::Error::AliasError { error: inner, .. } => error = inner,
            _ => return None,
        }
    }
}

/// A budget breach in words (the parser's own text is its Debug form,
/// `Nodes { nodes: 250001 }`). Aliases that expand a small file into a
/// huge one are the usual cause.
fn budget_words(breach: &serde_saphyr::budget::BudgetBreach) -> String {
    use serde_saphyr::budget::BudgetBreach as B;
    let what = match breach {
        B::Events { events } => format!("more than {events} parser events"),
        B::Aliases { aliases } => format!("more than {aliases} alias uses (*name)"),
        B::Anchors { anchors } => format!("more than {anchors} anchors (&name)"),
        B::Depth { depth } => format!("nesting deeper than {depth} levels"),
        B::Documents { documents } => format!("more than {documents} documents"),
        B::Nodes { nodes } => format!("more than {nodes} values once aliases are expanded"),
        B::ScalarBytes { total_scalar_bytes } => {
            format!("more than {total_scalar_bytes} bytes of text values")
        }
        B::MergeKeys { merge_keys } => format!("more than {merge_keys} merge keys (<<)"),
        B::AliasAnchorRatio { aliases, anchors } => {
            format!("{aliases} alias uses for {anchors} anchors, too many per anchor")
        }
        B::SequenceUnbalanced => "unbalanced sequences".to_owned(),
        _ => "more structure than the parser's limits allow".to_owned(),
    };
    format!(
        "the YAML holds {what}, past the limit that keeps a small file from expanding into a huge one; write the values out instead of repeating aliases, or split the file"
    )
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

    #[test]
    fn an_alias_bomb_is_refused_in_words_not_as_a_debug_dump() {
        // Each level repeats the one before ten times: 10^6 values from a
        // few hundred bytes.
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..=6 {
            let previous = format!("*a{}", level - 1);
            let items = [previous.as_str(); 10].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{items}]\n"));
        }
        let (_, _, message) = decode_yaml(&text).unwrap_err();
        assert!(message.starts_with("the YAML holds "), "{message}");
        assert!(
            !message.contains('{') && !message.contains("Some("),
            "{message}"
        );
    }
}
