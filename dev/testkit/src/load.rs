//! What a phase of a benchmark cost the control plane: the CPU the
//! `kube-apiserver` and `etcd` processes on this machine used (from
//! `/proc`), and the requests the apiserver served, by verb and resource
//! (its own `apiserver_request_total`). Benches print these beside the
//! same work done raw; nothing here is asserted.

use std::collections::BTreeMap;

use kube::Client;

/// CPU seconds (user + system) a `/proc/<pid>/stat` line reports.
pub fn stat_cpu_seconds(stat: &str) -> f64 {
    // The command name (field 2) may hold spaces; fields after it are plain.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU time the processes on this machine whose command is one of
/// `commands` have used so far, in seconds (zero when there are none:
/// a control plane elsewhere).
pub fn processes_cpu_seconds(commands: &[&str]) -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|entry| {
            let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
            commands
                .contains(&comm.trim())
                .then(|| std::fs::read_to_string(entry.path().join("stat")).ok())
                .flatten()
        })
        .map(|stat| stat_cpu_seconds(&stat))
        .sum()
}

/// CPU time of every `kube-apiserver` and `etcd` on this machine so far:
/// what the control plane spends on a phase, whoever waits on it.
pub fn control_plane_cpu_seconds() -> f64 {
    processes_cpu_seconds(&["kube-apiserver", "etcd"])
}

/// CPU time of every `kube-apiserver` on this machine so far.
pub fn apiserver_cpu_seconds() -> f64 {
    processes_cpu_seconds(&["kube-apiserver"])
}

/// Requests the apiserver has served so far (`apiserver_request_total`),
/// per verb and resource (`"create configmaps"`, `"patch instances/status"`),
/// read from its own `/metrics`; empty when it cannot be read.
pub async fn apiserver_requests(client: &Client) -> BTreeMap<String, f64> {
    let Ok(request) = http::Request::get("/metrics").body(Vec::new()) else {
        return BTreeMap::new();
    };
    let text = client.request_text(request).await.unwrap_or_default();
    requests_by_verb_and_resource(&text)
}

/// [`apiserver_requests`] from the `/metrics` text.
fn requests_by_verb_and_resource(text: &str) -> BTreeMap<String, f64> {
    let label = |line: &str, name: &str| {
        let start = line
            .find(&format!(",{name}=\""))
            .or_else(|| line.find(&format!("{{{name}=\"")))?
            + name.len()
            + 3;
        let end = line[start..].find('"')?;
        Some(line[start..start + end].to_owned())
    };
    let mut counts = BTreeMap::new();
    for line in text
        .lines()
        .filter(|line| line.starts_with("apiserver_request_total{"))
    {
        let Some(value) = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        let verb = label(line, "verb").unwrap_or_default().to_lowercase();
        let mut resource = label(line, "resource").unwrap_or_default();
        if let Some(sub) = label(line, "subresource").filter(|sub| !sub.is_empty()) {
            resource = format!("{resource}/{sub}");
        }
        *counts.entry(format!("{verb} {resource}")).or_insert(0.0) += value;
    }
    counts
}

/// What was served between two readings of [`apiserver_requests`].
pub fn served_since(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    after
        .iter()
        .map(|(key, value)| (key.clone(), value - before.get(key).copied().unwrap_or(0.0)))
        .filter(|(_, value)| *value > 0.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_summed_by_verb_and_resource_with_the_subresource() {
        let text = "\
# HELP apiserver_request_total Counter of apiserver requests
apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"GET\",version=\"v1\"} 4
apiserver_request_total{code=\"404\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"GET\",version=\"v1\"} 1
apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"core.pakket.dev\",resource=\"instances\",scope=\"cluster\",subresource=\"status\",verb=\"PUT\",version=\"v1alpha1\"} 7
apiserver_request_duration_seconds_count{resource=\"configmaps\",verb=\"GET\"} 99
";
        let counts = requests_by_verb_and_resource(text);
        assert_eq!(counts.get("get configmaps"), Some(&5.0));
        assert_eq!(counts.get("put instances/status"), Some(&7.0));
        assert_eq!(counts.len(), 2, "{counts:?}");
    }

    #[test]
    fn served_since_keeps_what_grew() {
        let before = BTreeMap::from([("get a".to_owned(), 2.0), ("get b".to_owned(), 1.0)]);
        let after = BTreeMap::from([
            ("get a".to_owned(), 5.0),
            ("get b".to_owned(), 1.0),
            ("list c".to_owned(), 1.0),
        ]);
        let served = served_since(&before, &after);
        assert_eq!(
            served,
            BTreeMap::from([("get a".to_owned(), 3.0), ("list c".to_owned(), 1.0)])
        );
    }

    #[test]
    fn cpu_is_read_after_the_command_name_even_with_spaces() {
        // pid (comm) state ppid … utime (14th) stime (15th)
        let stat = "42 (kube apiserver) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0";
        assert_eq!(stat_cpu_seconds(stat), 3.0);
    }
}
