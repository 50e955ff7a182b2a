//! `pakket resolve [--catalog PATH[@PRIORITY]]... [--installed PATH] [-o text|json|yaml] REQUEST...`
//! and `pakket resolve --server URL [--token TOKEN] ...`: the same request
//! answered from files or by a cluster's resolver API, printed the same way
//! (both go through `pakket_resolve_api::protocol::resolve`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use pakket_engine::catalog::{Catalog, CatalogArgument, CatalogSet};
use pakket_engine::resolve::{Explanation, Installed, Request, Universe};
use pakket_resolve_api::protocol::resolve::{
    self as shared, InstalledItem, Outcome, RequestItem, ResolveRequest, Resolved, SelectionReason,
};
use pakket_resolve_client::{ClientError, ResolverClient};

/// Arguments of `pakket resolve`.
#[derive(Args)]
pub struct ResolveArgs {
    /// A catalog file or directory, optionally with a priority (higher wins; default 0).
    /// Repeat for several catalogs.
    #[arg(
        long = "catalog",
        value_name = "PATH[@PRIORITY]",
        required_unless_present = "server",
        conflicts_with = "server"
    )]
    catalogs: Vec<String>,
    /// Ask a cluster's resolver API (`https://HOST:PORT`) instead of reading
    /// catalog files: it resolves against the cluster's Catalogs.
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// The bearer token sent to --server (a cluster user's token).
    #[arg(long, env = "PAKKET_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A CA certificate (PEM) to trust for --server besides the system's.
    #[arg(long, value_name = "FILE", requires = "server")]
    server_ca: Option<PathBuf>,
    /// YAML or JSON list of what is installed: `{package, version}` or `{bundle}` items.
    #[arg(long, value_name = "PATH")]
    installed: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    output: Format,
    /// Show every catalog problem found while loading (by default only a count).
    #[arg(short, long)]
    verbose: bool,
    /// `PACKAGE`, `PACKAGE@CHANNEL`, `PACKAGE=RANGE` or `PACKAGE@CHANNEL=RANGE`
    /// (quote ranges with spaces: `'etcd=>=0.9.0 <1.0.0'`).
    #[arg(required = true, value_name = "REQUEST")]
    requests: Vec<String>,
}

/// How results are printed.
#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
    Yaml,
}

/// Exit statuses, as documented in `--help`.
const SOLVED: u8 = 0;
const NO_SOLUTION: u8 = 1;
const BAD_INPUT: u8 = 2;

/// Runs the command; the exit code says solved / no solution / bad input.
pub fn run(args: &ResolveArgs) -> ExitCode {
    let outcome = match &args.server {
        Some(server) => ask_server(args, server),
        None => load_inputs(args).map_or_else(Outcome::BadInput, |(universe, checked)| {
            shared::resolve(&universe, &checked.requests, &checked.installed)
        }),
    };
    print_outcome(args.output, &outcome);
    ExitCode::from(match outcome {
        Outcome::Resolved(_) => SOLVED,
        Outcome::NoSolution(_) => NO_SOLUTION,
        Outcome::BadInput(_) => BAD_INPUT,
    })
}

/// What the engine is asked, read from the command line and files.
struct Inputs {
    requests: Vec<Request>,
    installed: Vec<Installed>,
}

fn load_inputs(args: &ResolveArgs) -> Result<(Universe, Inputs), String> {
    let requests = args
        .requests
        .iter()
        .map(|text| Request::parse_cli(text).map_err(|error| error.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut catalogs = Vec::new();
    for spec in &args.catalogs {
        let argument = CatalogArgument::parse(spec)?;
        let catalog = Catalog::load(&argument.path, &argument.name, argument.priority)
            // The catalog error already names the file, line and column.
            .map_err(|error| error.to_string())?;
        report_diagnostics(&catalog, args.verbose);
        catalogs.push(catalog);
    }
    let set = CatalogSet::new(catalogs);
    let universe = Universe::from_catalogs(&set);
    let installed = match &args.installed {
        Some(path) => read_installed(path)?,
        None => Vec::new(),
    };
    Ok((
        universe,
        Inputs {
            requests,
            installed,
        },
    ))
}

/// Sends the request to `server` and reads its answer as the files' path
/// would have produced it.
fn ask_server(args: &ResolveArgs, server: &str) -> Outcome {
    let installed = match &args.installed {
        Some(path) => match read_installed(path) {
            Ok(installed) => installed,
            Err(message) => return Outcome::BadInput(message),
        },
        None => Vec::new(),
    };
    let request = ResolveRequest {
        requests: args
            .requests
            .iter()
            .cloned()
            .map(RequestItem::Text)
            .collect(),
        installed: installed.iter().map(InstalledItem::from).collect(),
    };
    let answer = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| ClientError::Transport(error.to_string()))
        .and_then(|runtime| {
            let client =
                ResolverClient::new(server, args.token.clone(), args.server_ca.as_deref())?;
            runtime.block_on(client.resolve(&request))
        });
    match answer {
        Ok(outcome) => outcome,
        Err(error) => Outcome::BadInput(format!("--server {server}: {error}")),
    }
}

fn report_diagnostics(catalog: &Catalog, verbose: bool) {
    let diagnostics = &catalog.diagnostics;
    if diagnostics.is_empty() {
        return;
    }
    let mut stderr = std::io::stderr().lock();
    if verbose {
        for diagnostic in diagnostics {
            let _ = writeln!(stderr, "warning: catalog {}: {diagnostic}", catalog.name);
        }
    } else {
        let _ = writeln!(
            stderr,
            "warning: catalog {} has {} problems (left out or tolerated); -v lists them",
            catalog.name,
            diagnostics.len()
        );
    }
}

fn read_installed(path: &Path) -> Result<Vec<Installed>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("--installed {}: {error}", path.display()))?;
    serde_saphyr::from_str::<Vec<Installed>>(&text).map_err(|error| {
        format!(
            "--installed {}: {error} (expected a list of {{package, version}} or {{bundle}} items)",
            path.display()
        )
    })
}

fn reason_text(reason: &SelectionReason) -> String {
    match reason {
        SelectionReason::Requested {
            request,
            replaces: None,
        } => format!("requested ({request})"),
        SelectionReason::Requested {
            request,
            replaces: Some(from),
        } => format!("requested ({request}), updates installed {from}"),
        SelectionReason::Installed => "installed, kept".to_owned(),
        SelectionReason::Upgrade { from } => format!("update of installed {from}"),
        SelectionReason::Dependency { of, needs } => format!("{of} needs {needs}"),
    }
}

/// Prints what the resolution came to; text goes to stdout, except a bad
/// input's message (stderr).
fn print_outcome(format: Format, outcome: &Outcome) {
    match format {
        Format::Json => print!("{}", shared::to_json(&outcome.response())),
        Format::Yaml => print!(
            "{}",
            serde_saphyr::to_string(&outcome.response()).expect("serializable")
        ),
        Format::Text => match outcome {
            Outcome::Resolved(resolved) => print!("{}", resolution_text(resolved)),
            Outcome::NoSolution(failed) => match &failed.error.explanation {
                Some(explanation) => print!("{}", Explanation::from(explanation)),
                None => println!("{}", failed.error.message),
            },
            Outcome::BadInput(message) => eprintln!("error: {message}"),
        },
    }
}

/// The resolution as a table, then a line for each deprecated bundle.
fn resolution_text(resolution: &Resolved) -> String {
    let rows: Vec<[String; 6]> = resolution
        .resolved
        .iter()
        .map(|selection| {
            let mut bundle = selection.bundle.clone();
            if selection.deprecated.is_some() {
                bundle.push_str(" (deprecated)");
            }
            [
                selection.package.clone(),
                selection.version.clone(),
                bundle,
                selection.channel.clone().unwrap_or_else(|| "-".to_owned()),
                selection.catalog.clone(),
                reason_text(&selection.reason),
            ]
        })
        .collect();
    let mut text = table(
        ["PACKAGE", "VERSION", "BUNDLE", "CHANNEL", "CATALOG", "WHY"],
        &rows,
    );
    let deprecated: Vec<_> = resolution
        .resolved
        .iter()
        .filter_map(|selection| Some((&selection.bundle, selection.deprecated.as_ref()?)))
        .collect();
    if !deprecated.is_empty() {
        text.push('\n');
        for (bundle, why) in deprecated {
            text.push_str(&format!("{bundle} is deprecated: {why}\n"));
        }
    }
    text
}

/// Columns stop widening here: a longer cell (a generated bundle name, a
/// long range) is printed whole and pushes the rest of its row right,
/// instead of padding every other row to its width.
const MAX_COLUMN_WIDTH: usize = 80;

fn table<const N: usize>(headers: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = headers.map(|header| header.chars().count());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count().min(MAX_COLUMN_WIDTH));
        }
    }
    let mut text = String::new();
    let mut line = |cells: [&str; N]| {
        let mut line = String::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            // Padded by hand: `format!("{cell:<width$}")` panics for widths
            // past 65,535, and a catalog can hold a name that long.
            let pad = width.saturating_sub(cell.chars().count());
            line.extend(std::iter::repeat_n(' ', pad));
        }
        text.push_str(line.trim_end());
        text.push('\n');
    };
    line(headers);
    for row in rows {
        line(row.each_ref().map(String::as_str));
    }
    text
}
