//! Unpacked content to a loaded catalog: where the catalog is in it, the
//! engine's loader, and the loader's findings summarized for a status.

use std::collections::BTreeMap;
use std::path::Path;

use pakket_engine::catalog::{Catalog, Diagnostic, Severity};

use crate::Error;
use crate::catalogs::catalog::{CatalogSource, DiagnosticsSummary};

/// Findings written out in status; the rest are counted.
pub const LISTED_DIAGNOSTICS: usize = 10;
/// Longest finding written out, in characters.
const MAX_DIAGNOSTIC_LENGTH: usize = 300;

/// Loads the catalog in `dir` as catalog `name` at `priority`.
///
/// An image holds its catalog under `configs/` (OLM's layout); a ConfigMap
/// or a tarball may hold it there or at its root. Content that does not
/// parse, or holds no package at all, is refused: serving it would hide
/// every package the last good content had.
pub fn load(
    dir: &Path,
    source: &CatalogSource,
    name: &str,
    priority: i32,
) -> Result<Catalog, Error> {
    let configs = dir.join("configs");
    let root = if configs.is_dir() {
        configs
    } else if source.image.is_some() {
        return Err(Error::Invalid {
            message: format!(
                "{}: the image has no /configs directory; an FBC image holds its catalog under /configs (OLM's layout): build it from a directory holding configs/",
                source.field()
            ),
        });
    } else {
        dir.to_path_buf()
    };
    let catalog = Catalog::load(&root, name, priority).map_err(|error| Error::Invalid {
        message: format!("{}: {}", source.field(), relative(&error.to_string(), dir)),
    })?;
    if catalog.packages.is_empty() {
        let problems = summarize(&catalog.diagnostics, dir);
        let first = problems
            .first
            .first()
            .map(|finding| format!(" (first problem: {finding})"))
            .unwrap_or_default();
        return Err(Error::Invalid {
            message: format!(
                "{}: the content holds no olm.package document{first}; publish File-Based Catalog files (.json, .yaml) with olm.package, olm.channel and olm.bundle documents",
                source.field()
            ),
        });
    }
    Ok(catalog)
}

/// The loader's findings, errors first, paths relative to the content.
pub fn summarize(diagnostics: &[Diagnostic], content: &Path) -> DiagnosticsSummary {
    let mut summary = DiagnosticsSummary::default();
    let mut by_code: BTreeMap<String, u64> = BTreeMap::new();
    for diagnostic in diagnostics {
        match diagnostic.severity() {
            Severity::Error => summary.errors += 1,
            Severity::Warning => summary.warnings += 1,
        }
        *by_code
            .entry(diagnostic.code.as_str().to_owned())
            .or_default() += 1;
    }
    let mut ordered: Vec<&Diagnostic> = diagnostics.iter().collect();
    // Stable: file and line order within each severity.
    ordered.sort_by_key(|d| std::cmp::Reverse(d.severity()));
    summary.first = ordered
        .iter()
        .take(LISTED_DIAGNOSTICS)
        .map(|d| shorten(&relative(&d.to_string(), content)))
        .collect();
    summary.omitted = diagnostics.len().saturating_sub(LISTED_DIAGNOSTICS) as u64;
    summary.by_code = by_code;
    summary
}

/// `text` with the content directory's path taken out, so a finding names
/// `configs/etcd/catalog.yaml:12`, not the store's folder.
fn relative(text: &str, content: &Path) -> String {
    let prefix = format!("{}/", content.display());
    text.replace(&prefix, "")
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= MAX_DIAGNOSTIC_LENGTH {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX_DIAGNOSTIC_LENGTH - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogs::catalog::ImageCatalogSource;

    fn image() -> CatalogSource {
        CatalogSource {
            image: Some(ImageCatalogSource {
                reference: "localhost:5000/c:1".into(),
            }),
            ..CatalogSource::default()
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "pakket-resolveset-load-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn an_image_without_configs_is_refused_with_what_to_do() {
        let dir = scratch("noconfigs");
        std::fs::write(dir.join("catalog.json"), "{}").unwrap();
        let error = load(&dir, &image(), "c", 0).unwrap_err();
        assert!(error.to_string().contains("/configs"), "{error}");
        assert!(
            error.to_string().starts_with("spec.source.image.ref"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn broken_content_names_the_file_inside_the_content_not_the_store() {
        let dir = scratch("broken");
        std::fs::create_dir_all(dir.join("configs")).unwrap();
        std::fs::write(dir.join("configs/catalog.json"), "{\"schema\": ").unwrap();
        let error = load(&dir, &image(), "c", 0).unwrap_err();
        let text = error.to_string();
        assert!(text.contains(" configs/catalog.json:1"), "{text}");
        assert!(!text.contains(&dir.display().to_string()), "{text}");
        assert_eq!(error.reason(), crate::Reason::CatalogInvalid);

        std::fs::write(
            dir.join("configs/catalog.json"),
            "{\"schema\": \"olm.bundle\"}",
        )
        .unwrap();
        let error = load(&dir, &image(), "c", 0).unwrap_err();
        assert!(error.to_string().contains("no olm.package"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn long_findings_are_counted_and_the_first_written_out() {
        // The derived community catalog: 200 dangling replaces, 65
        // multi-head channels (see ../shared/data/README.md).
        let path = pakket_testkit::data("fbc/community-operators-prod-derived");
        let catalog = Catalog::load(&path, "community", 0).unwrap();
        let summary = summarize(&catalog.diagnostics, &path);
        assert_eq!(summary.first.len(), LISTED_DIAGNOSTICS);
        assert_eq!(
            summary.errors + summary.warnings,
            catalog.diagnostics.len() as u64
        );
        assert_eq!(
            summary.omitted,
            (catalog.diagnostics.len() - LISTED_DIAGNOSTICS) as u64
        );
        assert!(summary.by_code["DanglingReplaces"] > 0);
        assert!(summary.by_code["MultipleHeads"] > 0);
        assert!(
            summary
                .first
                .iter()
                .all(|line| line.starts_with("catalog.json:"))
        );
    }
}
