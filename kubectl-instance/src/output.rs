//! Machine-readable output: `-o json` and `-o yaml`.

use std::io::Write;

use clap::ValueEnum;
use serde::Serialize;

use crate::error::Error;

/// The formats `-o` accepts; without `-o` commands print for people.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Pretty-printed JSON.
    Json,
    /// YAML.
    Yaml,
}

/// Writes `value` in `format`, ending with a newline.
pub fn print(value: &impl Serialize, format: Format, out: &mut impl Write) -> Result<(), Error> {
    let text = match format {
        Format::Json => {
            serde_json::to_string_pretty(value).map_err(|error| Error::Encode(error.to_string()))?
        }
        Format::Yaml => {
            serde_saphyr::to_string(value).map_err(|error| Error::Encode(error.to_string()))?
        }
    };
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes an explanation for people, as `why` prints one for a package or
/// a request: `SUBJECT: SUMMARY`, each reason on its own line, then the
/// next step if there is one.
pub fn explanation(
    out: &mut impl Write,
    subject: &str,
    summary: &str,
    reasons: &[String],
    next: Option<&str>,
) -> Result<(), Error> {
    writeln!(out, "{subject}: {summary}")?;
    for reason in reasons {
        writeln!(out, "  - {reason}")?;
    }
    if let Some(next) = next {
        writeln!(out, "Next: {next}")?;
    }
    Ok(())
}
