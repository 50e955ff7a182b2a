//! A provisioner or webhook process as tests and benches run it: started
//! with its probes on a free loopback port (`--probe-address
//! 127.0.0.1:0`), which its first line of output names, and read over
//! plain HTTP (`/metrics`, `/readyz`).

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// Starts `command` (which must print its probe address, `… http://ADDR`,
/// as its first line) and returns it with that address. The rest of its
/// output is read and dropped, so it never blocks on a full pipe; the
/// process dies with the returned [`Child`].
pub async fn spawn(mut command: Command) -> (Child, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("starting the process");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let first = lines
        .next_line()
        .await
        .expect("reading its first line")
        .expect("a first line naming its probe address");
    let address = first
        .rsplit("http://")
        .next()
        .expect("an address")
        .trim()
        .to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, address)
}

/// A plain HTTP/1.0 GET of `path` at `address`: the body, if the answer
/// is 200.
pub async fn get(address: &str, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(address).await.ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.contains(" 200 ").then(|| body.to_owned())
}

/// The sum of every sample of metric `name` (all its label sets) in a
/// Prometheus text exposition; 0 when it has none.
pub fn metric_total(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_is_summed_over_its_labels_and_no_longer_name_counts() {
        let text = "\
# HELP pakket_reconciles_total Reconciles
# TYPE pakket_reconciles_total counter
pakket_reconciles_total{outcome=\"ok\"} 5
pakket_reconciles_total{outcome=\"error\"} 2
pakket_reconciles_total_seconds 100
pakket_reconcile_seconds_count 9
pakket_is_leader 1
";
        assert_eq!(metric_total(text, "pakket_reconciles_total"), 7.0);
        assert_eq!(metric_total(text, "pakket_is_leader"), 1.0);
        assert_eq!(metric_total(text, "pakket_missing"), 0.0);
    }
}
