//! What a soak or fault run leaves for a person to look at: samples of a
//! provisioner's memory and of the apiserver's request rate over the run,
//! written as a Markdown table and a PNG plot (which README embeds).
//!
//! [`Sampler`] takes the samples (the process's RSS from `/proc`, read by
//! [`pakket_controlplane::rss_kib`], the
//! apiserver's `apiserver_request_total` from its `/metrics`); [`Report`]
//! summarises them per phase and draws them. Figures are printed and
//! written, never asserted on by time: a slower machine is not a failure.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use kube::Client;

/// One moment of a run.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Seconds since the run began.
    pub seconds: f64,
    /// The phase the run was in ("wave 2: pivot").
    pub phase: String,
    /// The provisioner's resident memory, MiB (all its replicas', where
    /// there are several).
    pub rss_mib: f64,
    /// Requests the apiserver answered per second since the last sample
    /// (every client's, the provisioner's most of all).
    pub requests_per_second: f64,
}

/// Samples a process and the apiserver.
pub struct Sampler {
    client: Client,
    began: Instant,
    last: Option<(Instant, f64)>,
    /// Every sample so far.
    pub samples: Vec<Sample>,
}

impl Sampler {
    /// A sampler whose clock starts now.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            began: Instant::now(),
            last: None,
            samples: Vec::new(),
        }
    }

    /// Takes a sample of process `pid` in `phase`. The first sample has no
    /// rate yet (0).
    pub async fn sample(&mut self, pid: u32, phase: &str) -> anyhow::Result<&Sample> {
        let rss_kib = pakket_controlplane::rss_kib(pid).ok_or_else(|| {
            anyhow::anyhow!("process {pid} has no resident memory to read (gone?)")
        })?;
        let rss_mib = rss_kib as f64 / 1024.0;
        self.sample_rss(rss_mib, phase).await
    }

    /// Takes a sample with the memory measured by the caller (the sum over
    /// several replicas, say).
    pub async fn sample_rss(&mut self, rss_mib: f64, phase: &str) -> anyhow::Result<&Sample> {
        let total = requests_served(&self.client).await?;
        let now = Instant::now();
        let requests_per_second = match self.last {
            Some((then, before)) => {
                let seconds = now.duration_since(then).as_secs_f64().max(1e-3);
                (total - before).max(0.0) / seconds
            }
            None => 0.0,
        };
        self.last = Some((now, total));
        self.samples.push(Sample {
            seconds: now.duration_since(self.began).as_secs_f64(),
            phase: phase.to_owned(),
            rss_mib,
            requests_per_second,
        });
        Ok(self.samples.last().expect("just pushed"))
    }
}

/// Every request the apiserver has answered since it started: the sum of
/// its `apiserver_request_total` counters.
pub async fn requests_served(client: &Client) -> anyhow::Result<f64> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    Ok(crate::probes::metric_total(
        &text,
        "apiserver_request_total",
    ))
}

/// One phase's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSummary {
    /// Its name, as the samples give it.
    pub phase: String,
    /// How long it lasted, seconds.
    pub seconds: f64,
    /// RSS at its last sample, MiB.
    pub rss_end_mib: f64,
    /// The highest RSS sampled in it, MiB.
    pub rss_peak_mib: f64,
    /// The apiserver's mean request rate over it.
    pub mean_requests_per_second: f64,
}

/// A run's samples, with a title, summarised and drawn.
pub struct Report {
    /// What ran ("10,000 plain Instances in 5 waves").
    pub title: String,
    /// The samples, in time order.
    pub samples: Vec<Sample>,
}

impl Report {
    /// The phases in the order they ran, with their figures.
    pub fn phases(&self) -> Vec<PhaseSummary> {
        let mut phases: Vec<PhaseSummary> = Vec::new();
        let mut previous_end = 0.0;
        let mut count = 0usize;
        let mut rate_sum = 0.0;
        for sample in &self.samples {
            match phases.last_mut() {
                Some(current) if current.phase == sample.phase => {
                    current.rss_end_mib = sample.rss_mib;
                    current.rss_peak_mib = current.rss_peak_mib.max(sample.rss_mib);
                    current.seconds = sample.seconds - previous_end;
                    count += 1;
                    rate_sum += sample.requests_per_second;
                    current.mean_requests_per_second = rate_sum / count as f64;
                }
                _ => {
                    if let Some(current) = phases.last() {
                        previous_end += current.seconds;
                    }
                    count = 1;
                    rate_sum = sample.requests_per_second;
                    phases.push(PhaseSummary {
                        phase: sample.phase.clone(),
                        seconds: sample.seconds - previous_end,
                        rss_end_mib: sample.rss_mib,
                        rss_peak_mib: sample.rss_mib,
                        mean_requests_per_second: sample.requests_per_second,
                    });
                }
            }
        }
        phases
    }

    /// The report as Markdown: a table of phases, then the samples (at
    /// most `rows` of them, evenly spread).
    pub fn markdown(&self, rows: usize) -> String {
        let mut text = format!("### {}\n\n", self.title);
        text.push_str(
            "| phase | lasted | provisioner RSS at its end | RSS peak | apiserver requests/s (mean) |\n|---|---:|---:|---:|---:|\n",
        );
        for phase in self.phases() {
            let _ = writeln!(
                text,
                "| {} | {:.1} s | {:.1} MiB | {:.1} MiB | {:.0} |",
                phase.phase,
                phase.seconds,
                phase.rss_end_mib,
                phase.rss_peak_mib,
                phase.mean_requests_per_second
            );
        }
        text.push_str("\n| t | phase | RSS | requests/s |\n|---:|---|---:|---:|\n");
        let step = self.samples.len().div_ceil(rows.max(1)).max(1);
        for sample in self.samples.iter().step_by(step) {
            let _ = writeln!(
                text,
                "| {:.0} s | {} | {:.1} MiB | {:.0} |",
                sample.seconds, sample.phase, sample.rss_mib, sample.requests_per_second
            );
        }
        text
    }

    /// Every sample as CSV (`seconds,phase,rss_mib,requests_per_second`),
    /// so a plot can be drawn again, or otherwise, without a rerun.
    pub fn csv(&self) -> String {
        let mut text = String::from("seconds,phase,rss_mib,requests_per_second\n");
        for sample in &self.samples {
            let _ = writeln!(
                text,
                "{:.2},{},{:.2},{:.1}",
                sample.seconds, sample.phase, sample.rss_mib, sample.requests_per_second
            );
        }
        text
    }

    /// Draws RSS and the request rate over time, one above the other, into
    /// a PNG at `path`, with text in the font at `font` (a TrueType file).
    pub fn plot(&self, path: &Path, font: &Path) -> anyhow::Result<()> {
        use plotters::prelude::*;
        register_font(font)?;
        let end = self.samples.last().map_or(1.0, |s| s.seconds).max(1.0);
        let rss_top = self.samples.iter().map(|s| s.rss_mib).fold(1.0, f64::max) * 1.15;
        let rate_top = self
            .samples
            .iter()
            .map(|s| s.requests_per_second)
            .fold(1.0, f64::max)
            * 1.15;
        let root = BitMapBackend::new(path, (1000, 640)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(&self.title, ("sans-serif", 22))?;
        let (upper, lower) = root.split_vertically(300);
        let panels = [
            (
                upper,
                "provisioner RSS (MiB)",
                rss_top,
                BLUE,
                self.samples
                    .iter()
                    .map(|s| (s.seconds, s.rss_mib))
                    .collect::<Vec<_>>(),
            ),
            (
                lower,
                "apiserver requests/s",
                rate_top,
                RED,
                self.samples
                    .iter()
                    .map(|s| (s.seconds, s.requests_per_second))
                    .collect(),
            ),
        ];
        for (area, label, top, colour, points) in panels {
            let mut chart = ChartBuilder::on(&area)
                .margin(12)
                .x_label_area_size(34)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..end, 0.0..top)?;
            chart
                .configure_mesh()
                .x_desc("seconds")
                .y_desc(label)
                .label_style(("sans-serif", 14))
                .light_line_style(RGBColor(245, 245, 245))
                .draw()?;
            // Phase boundaries, as thin grey lines.
            let mut at = 0.0;
            for phase in self.phases() {
                at += phase.seconds;
                chart.draw_series(LineSeries::new(
                    [(at, 0.0), (at, top)],
                    RGBColor(150, 150, 150),
                ))?;
            }
            // A sample that is not a number (a counter read half-way) is
            // left out rather than drawn off the chart.
            let points = points
                .into_iter()
                .filter(|(_, value)| value.is_finite() && *value >= 0.0);
            chart.draw_series(LineSeries::new(points, colour.stroke_width(2)))?;
        }
        root.present()?;
        Ok(())
    }
}

impl Report {
    /// Writes `<stem>.md`, `<stem>.csv` and `<stem>.png` into
    /// `$PAKKET_REPORT_DIR` (a temporary folder if unset), and prints the
    /// Markdown; returns the folder.
    pub fn write(&self, stem: &str) -> anyhow::Result<std::path::PathBuf> {
        let folder = std::env::var_os("PAKKET_REPORT_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("pakket-reports-{}", std::process::id()))
            });
        std::fs::create_dir_all(&folder)?;
        let markdown = self.markdown(40);
        std::fs::write(folder.join(format!("{stem}.md")), &markdown)?;
        std::fs::write(folder.join(format!("{stem}.csv")), self.csv())?;
        self.plot(&folder.join(format!("{stem}.png")), Path::new(FONT))?;
        println!("{markdown}\nwritten to {}", folder.display());
        Ok(folder)
    }
}

/// Registers the TrueType font at `path` as plotters' "sans-serif" (once
/// per process: plotters keeps fonts for its lifetime, hence the leak).
fn register_font(path: &Path) -> anyhow::Result<()> {
    use std::sync::OnceLock;
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, bytes)
                .map_err(|_| format!("{}: not a TrueType font", path.display()))
        })
        .clone()
        .map_err(|message| anyhow::anyhow!(message))
}

/// The font reports are drawn with: DejaVu Sans, from Debian's
/// `fonts-dejavu-core` (`dev/prerequisites.sh` installs it).
pub const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seconds: f64, phase: &str, rss_mib: f64, rate: f64) -> Sample {
        Sample {
            seconds,
            phase: phase.into(),
            rss_mib,
            requests_per_second: rate,
        }
    }

    #[test]
    fn counters_are_summed_over_their_series_only() {
        let text = "# HELP apiserver_request_total x\n# TYPE apiserver_request_total counter\napiserver_request_total{code=\"200\",verb=\"GET\"} 10\napiserver_request_total{code=\"201\",verb=\"POST\"} 2.5\napiserver_request_total_other 99\napiserver_request_duration_seconds_count 7\n";
        assert_eq!(
            crate::probes::metric_total(text, "apiserver_request_total"),
            12.5
        );
    }

    #[test]
    fn phases_carry_their_duration_end_peak_and_mean_rate() {
        let report = Report {
            title: "t".into(),
            samples: vec![
                sample(1.0, "create", 10.0, 100.0),
                sample(2.0, "create", 30.0, 300.0),
                sample(3.0, "create", 20.0, 200.0),
                sample(5.0, "idle", 21.0, 4.0),
                sample(9.0, "idle", 19.0, 2.0),
            ],
        };
        let phases = report.phases();
        assert_eq!(phases.len(), 2);
        assert_eq!(
            phases[0],
            PhaseSummary {
                phase: "create".into(),
                seconds: 3.0,
                rss_end_mib: 20.0,
                rss_peak_mib: 30.0,
                mean_requests_per_second: 200.0,
            }
        );
        assert_eq!(phases[1].seconds, 6.0);
        assert_eq!(phases[1].rss_end_mib, 19.0);
        assert_eq!(phases[1].rss_peak_mib, 21.0);
        assert_eq!(phases[1].mean_requests_per_second, 3.0);
        let text = report.markdown(2);
        assert!(
            text.contains("| create | 3.0 s | 20.0 MiB | 30.0 MiB | 200 |"),
            "{text}"
        );
        assert_eq!(
            text.matches(" s | idle |").count() + text.matches(" s | create |").count(),
            2
        );
    }

    #[test]
    fn a_plot_is_a_png() {
        if !Path::new(FONT).exists() {
            panic!("{FONT} is missing: dev/prerequisites.sh installs fonts-dejavu-core");
        }
        let report = Report {
            title: "a plot".into(),
            samples: (0..50)
                .map(|i| {
                    sample(
                        i as f64,
                        if i < 25 { "a" } else { "b" },
                        20.0 + i as f64,
                        10.0,
                    )
                })
                .collect(),
        };
        let path = std::env::temp_dir().join(format!("pakket-report-{}.png", std::process::id()));
        report.plot(&path, Path::new(FONT)).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(bytes.len() > 5_000, "a drawn plot, not an empty image");
    }
}
