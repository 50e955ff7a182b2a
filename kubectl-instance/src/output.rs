//! Machine-readable output: `-o json` and `-o yaml`; on listing verbs
//! also `-o name`.

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

/// The formats `-o` accepts on a listing verb (`list`, `history`): a
/// document, or `name`, one `KIND.GROUP/NAME` a line as `kubectl get -o
/// name` prints them, to pipe into kubectl.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// Pretty-printed JSON.
    Json,
    /// YAML.
    Yaml,
    /// `KIND.GROUP/NAME`, one a line.
    Name,
}

impl ListFormat {
    /// The document format, or `None` for `name`.
    pub fn document(self) -> Option<Format> {
        match self {
            Self::Json => Some(Format::Json),
            Self::Yaml => Some(Format::Yaml),
            Self::Name => None,
        }
    }
}

/// How kubectl names an object of kind `K` in `-o name`:
/// `instance.core.pakket.dev/web` (kind lowercased, then the group; the
/// core group has none). A namespace is not part of it, as in kubectl.
pub fn kubectl_name<K: kube::Resource<DynamicType = ()>>(name: &str) -> String {
    resource_name(&K::kind(&()), &K::group(&()), name)
}

/// [`kubectl_name`] for a kind and group known as text.
pub fn resource_name(kind: &str, group: &str, name: &str) -> String {
    let kind = kind.to_lowercase();
    if group.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}.{group}/{name}")
    }
}

/// Writes `names`, one a line.
pub fn names(names: impl IntoIterator<Item = String>, out: &mut impl Write) -> Result<(), Error> {
    for name in names {
        writeln!(out, "{name}")?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_api::Instance;
    use pakket_helm_api::HelmChart;
    use pakket_operators_api::Operator;
    use pakket_packages_api::{ClusterPackage, Package};

    #[test]
    fn names_read_as_kubectl_prints_them() {
        assert_eq!(
            kubectl_name::<Instance>("web"),
            "instance.core.pakket.dev/web"
        );
        assert_eq!(
            kubectl_name::<Operator>("cnpg"),
            "operator.operators.pakket.dev/cnpg"
        );
        assert_eq!(
            kubectl_name::<ClusterPackage>("cnpg"),
            "clusterpackage.packages.pakket.dev/cnpg"
        );
        assert_eq!(
            kubectl_name::<Package>("tool"),
            "package.packages.pakket.dev/tool"
        );
        assert_eq!(
            kubectl_name::<HelmChart>("site"),
            "helmchart.helm.pakket.dev/site"
        );
        // The core group has no name: `pod/x`, as kubectl prints it.
        assert_eq!(resource_name("Pod", "", "x"), "pod/x");
    }

    #[test]
    fn names_print_one_a_line() {
        let mut out = Vec::new();
        names(["a/x".to_owned(), "a/y".to_owned()], &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "a/x\na/y\n");
    }

    #[test]
    fn name_is_no_document() {
        assert_eq!(ListFormat::Name.document(), None);
        assert_eq!(ListFormat::Yaml.document(), Some(Format::Yaml));
    }
}
