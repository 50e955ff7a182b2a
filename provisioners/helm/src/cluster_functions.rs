//! Template functions that need more than the chart: `lookup` reads the
//! cluster and `getHostByName` asks DNS. `helm template` renders both
//! without either (an empty map, an empty string), so a chart written to
//! reuse a Secret it finds, or an address it resolves, would install with
//! neither and say nothing. Pakket renders with no cluster access and no
//! network, so such a chart is refused, naming each template and the
//! function, before anything is written.
//!
//! Found by reading every template of the chart and of its subcharts
//! (folders in `charts/`, and archives there opened into a scratch folder
//! under the runtime's archive limits), in the actions (`{{ … }}`) only,
//! comments left out.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

/// The functions refused, and what each needs.
const FUNCTIONS: [(&str, &str); 2] = [("lookup", "the cluster"), ("getHostByName", "DNS")];

static ACTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)\{\{-?(.*?)-?\}\}").expect("a valid pattern"));
static CALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s(|])(lookup|getHostByName)(?:[\s)]|$)").expect("a valid pattern")
});

/// Refuses the chart in `chart` if a template calls a function that needs
/// the cluster or the network; the message names each.
pub fn refuse(chart: &Path) -> Result<(), String> {
    let mut found = Vec::new();
    scan_chart(chart, Path::new(""), &mut found)?;
    if found.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = found
        .iter()
        .map(|(file, function)| {
            let needs = FUNCTIONS
                .iter()
                .find(|(name, _)| name == function)
                .map_or("the cluster", |(_, needs)| needs);
            format!("{file} calls {function} (which needs {needs})")
        })
        .collect();
    Err(format!(
        "{}; Pakket renders charts with no cluster access and no network, where helm template would answer these empty, so the chart is not installed rather than installed with empty answers",
        named.join(", ")
    ))
}

/// The calls in `text`, a template's source.
pub fn calls(text: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for action in ACTION.captures_iter(text) {
        let inside = action[1].trim_start();
        if inside.starts_with("/*") {
            continue;
        }
        for call in CALL.captures_iter(inside) {
            if let Some((name, _)) = FUNCTIONS.iter().find(|(name, _)| *name == &call[1])
                && !found.contains(name)
            {
                found.push(*name);
            }
        }
    }
    found
}

/// Every template of the chart in `dir` (shown as under `shown`) and of
/// its subcharts.
fn scan_chart(
    dir: &Path,
    shown: &Path,
    found: &mut Vec<(String, &'static str)>,
) -> Result<(), String> {
    for file in files_under(&dir.join("templates"))? {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let relative = file.strip_prefix(dir).unwrap_or(&file);
        for function in calls(&text) {
            found.push((shown.join(relative).display().to_string(), function));
        }
    }
    let Ok(subcharts) = std::fs::read_dir(dir.join("charts")) else {
        return Ok(());
    };
    for entry in subcharts.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let under = shown.join("charts").join(&name);
        if path.is_dir() {
            scan_chart(&path, &under, found)?;
        } else if name.ends_with(".tgz") || name.ends_with(".tar.gz") {
            let opened = open_archive(&path)?;
            let inner = crate::template::chart_folder(opened.path())?;
            let inner_name = inner.file_name().map(PathBuf::from).unwrap_or_default();
            scan_chart(&inner, &under.join(inner_name), found)?;
        }
    }
    Ok(())
}

/// A subchart archive, opened into a scratch folder.
fn open_archive(path: &Path) -> Result<tempfile::TempDir, String> {
    let scratch = tempfile::tempdir().map_err(|error| format!("no scratch folder: {error}"))?;
    let dest = scratch.path().join("chart");
    let file = std::fs::File::open(path).map_err(|error| format!("{}: {error}", path.display()))?;
    pakket_runtime::kernel::archive::extract(file, &dest, &Default::default())
        .map_err(|error| format!("subchart {}: {error}", path.display()))?;
    Ok(scratch)
}

fn files_under(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(files);
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path)?);
        } else {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_in_actions_are_found_and_words_and_comments_are_not() {
        assert_eq!(
            calls(r#"{{ $s := lookup "v1" "Secret" .Release.Namespace "db" }}"#),
            ["lookup"]
        );
        assert_eq!(
            calls(r#"{{- if (lookup "v1" "Namespace" "" "x") }}"#),
            ["lookup"]
        );
        assert_eq!(
            calls(r#"addr: {{ getHostByName "db.example" }}"#),
            ["getHostByName"]
        );
        assert_eq!(calls(r#"{{ "x" | lookup }}"#), ["lookup"]);
        assert!(calls("# a lookup table, outside any action").is_empty());
        assert!(
            calls("{{ .Values.lookup }}").is_empty(),
            "a value named lookup"
        );
        assert!(calls("{{/* lookup would need the cluster */}}").is_empty());
        assert!(calls("{{ include \"lookupName\" . }}").is_empty());
    }

    #[test]
    fn a_chart_and_its_vendored_subchart_are_read_and_each_call_named() {
        let chart = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let file = chart.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        write("Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n");
        write("templates/deployment.yaml", "kind: Deployment\n");
        assert!(refuse(chart.path()).is_ok());
        write(
            "charts/db/Chart.yaml",
            "apiVersion: v2\nname: db\nversion: 1.0.0\n",
        );
        write(
            "charts/db/templates/secret.yaml",
            "{{ lookup \"v1\" \"Secret\" \"\" \"x\" }}\n",
        );
        write(
            "templates/_helpers.tpl",
            "{{ define \"a\" }}{{ getHostByName \"x\" }}{{ end }}\n",
        );
        let refused = refuse(chart.path()).unwrap_err();
        assert!(
            refused.contains("templates/_helpers.tpl calls getHostByName (which needs DNS)"),
            "{refused}"
        );
        assert!(
            refused
                .contains("charts/db/templates/secret.yaml calls lookup (which needs the cluster)"),
            "{refused}"
        );
    }
}
