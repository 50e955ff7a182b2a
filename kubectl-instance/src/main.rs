//! `kubectl instance`: a kubectl plugin for Pakket Instances.
//!
//! `list`, `describe NAME`, `approve NAME`, `deny NAME`, `why NAME`,
//! `policy test POLICY` talk to
//! the cluster as the caller (same kubeconfig, context and rights as
//! kubectl); `graph PACKAGE` reads catalog files and needs no cluster.
//!
//! `completion bash|zsh|fish` prints a completion script; kubectl's own
//! completion of `kubectl instance <TAB>` asks `kubectl_complete-instance`
//! (the crate's second binary), which asks this one (see `complete`).
//!
//! Exit status: 0 done (also "already approved"), 1 the request failed (not
//! found, forbidden, unreachable, package not in any catalog), 2 bad usage.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod adopt_helm;
mod age;
mod approval;
mod complete;
mod complete_names;
mod connect;
mod decide;
mod deps;
mod describe;
mod describe_request;
mod error;
mod events;
#[cfg(test)]
mod fixture;
mod graph;
mod helm_chart;
mod history;
mod identity;
mod list;
mod lookup;
mod operator;
mod operator_request;
mod operators;
mod output;
mod packages;
mod pending;
mod pivot;
mod plan;
mod policy_test;
mod resolver;
mod table;
mod why;
mod why_catalogs;
mod why_input;
mod why_package;
mod why_request;

use connect::ClusterArgs;
use error::Error;
use output::{Format, ListFormat};

#[derive(Parser)]
#[command(
    name = "kubectl-instance",
    bin_name = "kubectl instance",
    version,
    about = "Inspect, approve and explain Pakket Instances",
    long_about = "Inspect, approve and explain Pakket Instances (core.pakket.dev/v1alpha1).\n\n\
                  Install by putting kubectl-instance on PATH; kubectl then runs it as `kubectl instance`.\n\
                  Flags go after `instance`: `kubectl instance --context alice approve NAME`."
)]
struct Cli {
    #[command(flatten)]
    cluster: ClusterArgs,
    #[command(subcommand)]
    command: Command,
}

/// What `list` lists.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Listed {
    /// Instances (`core.pakket.dev`).
    Instances,
    /// Operators (`operators.pakket.dev`).
    Operators,
    /// ClusterPackages and Packages (`packages.pakket.dev`).
    Packages,
    /// HelmCharts (`helm.pakket.dev`), in every namespace or `-n`'s.
    Helmcharts,
}

/// What `adopt` takes over.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Adopted {
    /// A release Helm installed: it becomes a HelmChart.
    HelmRelease,
}

#[derive(Subcommand)]
enum Command {
    /// Turn a release Helm installed into a HelmChart, without downtime:
    /// `adopt helm-release NAME -n NAMESPACE --chart REF`.
    ///
    /// Reads the release's last deployed revision (Helm's Secret in the
    /// namespace): its chart, the values you gave and the objects it
    /// installed. Writes nothing unless you may patch every one of those
    /// objects and each is namespaced in NAMESPACE; then creates HelmChart
    /// NAME (as you: you are its author) with that chart and those values,
    /// and offers each object to its Instance (the adoption annotation), so
    /// the running objects are kept, not created again. Helm records no
    /// repository: --chart says where the chart comes from and must name
    /// the release's chart at its version. Helm's records are left for you
    /// to delete once the HelmChart is Installed.
    Adopt {
        /// What to adopt.
        #[arg(value_enum)]
        what: Adopted,
        /// The release's name.
        name: String,
        /// The release's namespace.
        #[arg(short = 'n', long)]
        namespace: String,
        /// The chart, `helm+https://REPOSITORY/#CHART@VERSION` or
        /// `oci://REGISTRY/PATH/CHART:VERSION`.
        #[arg(long)]
        chart: String,
        /// A label for the HelmChart, `KEY=VALUE` (repeat for more).
        #[arg(long = "label")]
        labels: Vec<String>,
    },
    /// List Instances (or Operators: `list operators`; packages: `list packages`; namespace owners' charts: `list helmcharts`), like `kubectl get`.
    List {
        /// What to list: `instances` (the default), `operators`, `packages` or `helmcharts`.
        #[arg(value_enum, default_value_t = Listed::Instances)]
        kind: Listed,
        /// For `helmcharts`: only this namespace's (what a namespace owner
        /// may list).
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// Only objects whose labels match this selector (`-l app=x,tier!=db`).
        #[arg(short = 'l', long)]
        selector: Option<String>,
        /// Print the objects as a `List` in JSON or YAML, or their names
        /// (`instance.core.pakket.dev/NAME`, as `kubectl get -o name`),
        /// instead of a table.
        #[arg(short = 'o', long = "output", value_enum)]
        output: Option<ListFormat>,
    },
    /// Show an Instance: conditions, Bundle, the operator (install namespace, watched namespaces, Deployments), objects, pivot history and events; or an Operator (`operator/NAME`): what it asks for, what it got, updates and components; or a package (`clusterpackage/NAME`, `package/NAMESPACE/NAME`): version, values, dependencies, conditions, its Instance; or a namespace owner's request (`operatorrequest/NAMESPACE/NAME`): what it asks for, where it stands, its conditions, its Operator and Instance; or a namespace owner's Helm chart (`helmchart/NAMESPACE/NAME`): its chart, release, values, state and Instance.
    Describe {
        /// The Instance's name, `operator/NAME`, `clusterpackage/NAME`, `package/NAMESPACE/NAME`, `operatorrequest/NAMESPACE/NAME` or `helmchart/NAMESPACE/NAME`.
        name: String,
        /// Print the same facts as JSON or YAML.
        #[arg(short = 'o', long = "output", value_enum)]
        output: Option<Format>,
    },
    /// Approve an Instance that waits for approval (needs verb `approve` on instances).
    ///
    /// Writes the Approved condition (True, ApprovedByUser, "approved by
    /// USER at TIME for Bundle B") and the content it covers
    /// (status.approval: the Bundle and the digest its status pins) on the
    /// status subresource, as you. The provisioner installs exactly that
    /// content: other bytes under the same name wait for a new approval.
    /// Review first with `kubectl instance describe NAME`. An Instance
    /// approved already for that content is left alone.
    ///
    /// The rights it takes, as a ClusterRole an admin can bind:
    ///
    ///   apiVersion: rbac.authorization.k8s.io/v1
    ///   kind: ClusterRole
    ///   metadata: {name: pakket-instance-approver}
    ///   rules:
    ///   - apiGroups: [core.pakket.dev]
    ///     resources: [instances]
    ///     verbs: [get, list, approve]
    ///   - apiGroups: [core.pakket.dev]
    ///     resources: [instances/status]
    ///     verbs: [update, patch]
    ///   - apiGroups: [core.pakket.dev]
    ///     resources: [bundles]
    ///     verbs: [get, list, watch]
    #[command(verbatim_doc_comment)]
    // The YAML above is help text, printed as written: its lists are not
    // links.
    #[allow(rustdoc::broken_intra_doc_links)]
    Approve {
        /// The Instance's name, or `operatorrequest/NAMESPACE/NAME` or
        /// `helmchart/NAMESPACE/NAME` for the Instance installing a
        /// namespace owner's request or chart.
        name: String,
        /// A note appended to the Approved condition's message.
        #[arg(short = 'm', long)]
        message: Option<String>,
        /// Approve only if the Bundle's content has this digest (sha256:...),
        /// e.g. content reviewed elsewhere.
        #[arg(long)]
        digest: Option<String>,
    },
    /// List an Instance's revisions: each install of other content, with
    /// its Bundle, content digest, approver, when it was applied and how
    /// its rollout went; the serving one is marked.
    History {
        /// The Instance's name.
        name: String,
        /// Print the history as JSON or YAML; `name` prints the
        /// Instance's, as `kubectl rollout history -o name`.
        #[arg(short = 'o', long = "output", value_enum)]
        output: Option<ListFormat>,
    },
    /// Ask for an earlier revision's content again (needs verbs get, patch
    /// on instances): by default the newest earlier revision that rolled
    /// out. It is a change like any other: the class's approval policy and
    /// CRD upgrade safety judge it; the earlier approval is not reused.
    Rollback {
        /// The Instance's name.
        name: String,
        /// The revision to return to (`kubectl instance history NAME`).
        #[arg(long = "to-revision", value_name = "N")]
        to_revision: Option<i64>,
    },
    /// Choose an Input over the requests it conflicts with (needs verb
    /// `approve` on inputs and `patch` on inputs/status: the example
    /// ClusterRole pakket-input-decider).
    ///
    /// Requests not installed yet that conflict all wait, each told so,
    /// until a person chooses: this writes `status.decision` on the Input
    /// chosen, as you, for its current generation and exactly the Inputs
    /// its status names. The others are told another was chosen. What is
    /// installed keeps running and is not chosen against. Review first with
    /// `kubectl instance why input/NAME`.
    Decide {
        /// The Input: `input/NAME` or `NAME`.
        name: String,
    },
    /// Refuse an Instance's approval (needs verb `approve` on instances).
    Deny {
        /// The Instance's name, `operatorrequest/NAMESPACE/NAME` or
        /// `helmchart/NAMESPACE/NAME`.
        name: String,
        /// Why, appended to the Approved condition's message.
        #[arg(short = 'm', long)]
        message: Option<String>,
    },
    /// Explain why an Instance (or an Input: `input/NAME`; a Glasskube
    /// package: `clusterpackage/NAME`, `package/NAMESPACE/NAME`; a namespace
    /// owner's request: `operatorrequest/NAMESPACE/NAME`; her Helm chart:
    /// `helmchart/NAMESPACE/NAME`) is in its state, and what to do next.
    Why {
        /// The Instance's name, `input/NAME`, `clusterpackage/NAME`,
        /// `package/NAMESPACE/NAME`, `operatorrequest/NAMESPACE/NAME` or
        /// `helmchart/NAMESPACE/NAME`.
        name: String,
        /// Print the explanation as JSON or YAML.
        #[arg(short = 'o', long = "output", value_enum)]
        output: Option<Format>,
        #[command(flatten)]
        resolver: resolver::ResolverArgs,
    },
    /// What resolving an Input or an Operator (`NAME`, or `input/NAME`,
    /// `operator/NAME` to say which) would change in the set, before anything is
    /// written: installs, upgrades, downgrades and removals, each with who
    /// asks for it, or why it cannot be satisfied. Reads the Inputs and the
    /// set from the cluster and asks the resolver API (`--server`), which
    /// runs the Input controller's own pass.
    Plan {
        /// `NAME` (an Input, else an Operator), `input/NAME` or `operator/NAME`.
        target: String,
        /// Plan this manifest (an Input or an Operator) in place of the
        /// cluster's object of that name, as if it were applied.
        #[arg(short = 'f', long = "filename", value_name = "FILE")]
        file: Option<std::path::PathBuf>,
        /// The set's Instance (`resolveset` where deploy/ installs Pakket).
        #[arg(long, default_value = "resolveset")]
        set: String,
        /// Print the plan as JSON or YAML.
        #[arg(short = 'o', long = "output", value_enum)]
        output: Option<Format>,
        #[command(flatten)]
        resolver: resolver::ResolverArgs,
    },
    /// Who an Instance needs and who needs it (from what each installed
    /// Instance provides and requires), as a tree, and what uses its APIs.
    Deps {
        /// The Instance's name.
        name: String,
        /// `text` (a tree) or `dot` (Graphviz).
        #[arg(long, value_enum, default_value_t = deps::DepsFormat::Text)]
        format: deps::DepsFormat,
        /// Print it as JSON or YAML instead.
        #[arg(short = 'o', long = "output", value_enum)]
        output: Option<Format>,
    },
    /// Print a package's update graphs from catalog files (no cluster needed)
    /// or from a cluster's resolver API (`--server`); or a Glasskube
    /// package's versions in a package repository (`--package-repository
    /// NAME`, `--repository-url URL`).
    Graph(graph::GraphArgs),
    /// Print a shell completion script for `kubectl-instance`: `source
    /// <(kubectl-instance completion bash)`. For `kubectl instance <TAB>`,
    /// put `kubectl_complete-instance` (shipped beside this binary) on PATH
    /// instead: kubectl >= 1.26 asks it, and it completes Instance names too.
    Completion {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// ApprovalPolicies: `policy test POLICY --instance NAME [--as USER
    /// --groups G]` prints what a policy (on the cluster, or a draft file)
    /// would decide for an Instance its provisioner has seen, over the
    /// inputs the runtime computed, writing nothing.
    Policy {
        #[command(subcommand)]
        action: PolicyAction,
    },
}

/// What `policy` does.
#[derive(Subcommand)]
enum PolicyAction {
    /// What POLICY would decide for an Instance: the rule and its message.
    Test(policy_test::TestArgs),
}

fn main() -> ExitCode {
    let mut args = std::env::args();
    let called = args.next().unwrap_or_default();
    let called = std::path::Path::new(&called)
        .file_stem()
        .map(|name| name.to_string_lossy().into_owned());
    let words: Option<Vec<String>> = if called.as_deref() == Some(complete::HELPER) {
        Some(args.collect())
    } else if std::env::args().nth(1).as_deref() == Some(complete::VERB) {
        Some(args.skip(1).collect())
    } else {
        None
    };
    if let Some(words) = words {
        return answer_completion(&words);
    }
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: starting the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Answers kubectl's completion request for `words`; never fails, as a
/// failure would make the shell offer file names.
fn answer_completion(words: &[String]) -> ExitCode {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        println!(":4");
        return ExitCode::SUCCESS;
    };
    let mut out = std::io::stdout().lock();
    // stdout closed: kubectl is gone, nobody to tell.
    let _ = runtime.block_on(complete::run(Cli::command(), words, &mut out));
    ExitCode::SUCCESS
}

async fn run(cli: Cli) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Completion { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "kubectl-instance", &mut out);
            Ok(())
        }
        Command::Graph(args) => graph::run(&args, &cli.cluster, &mut out).await,
        Command::Adopt {
            what: Adopted::HelmRelease,
            name,
            namespace,
            chart,
            labels,
        } => {
            let client = cli.cluster.client().await?;
            let asked = adopt_helm::Asked {
                name: &name,
                namespace: &namespace,
                chart: &chart,
                labels: &labels,
            };
            adopt_helm::run(&client, &asked, &mut out).await
        }
        Command::Policy {
            action: PolicyAction::Test(args),
        } => {
            let client = cli.cluster.client().await?;
            policy_test::run(&client, &args, &mut out).await
        }
        Command::Deps {
            name,
            format,
            output,
        } => {
            let client = cli.cluster.client().await?;
            deps::run(&client, &name, format, output, &mut out).await
        }
        Command::List {
            kind,
            namespace,
            selector,
            output,
        } => {
            let client = cli.cluster.client().await?;
            match kind {
                Listed::Instances => {
                    list::run(&client, selector.as_deref(), output, &mut out).await
                }
                Listed::Operators => {
                    operators::list(&client, selector.as_deref(), output, &mut out).await
                }
                Listed::Packages => {
                    packages::list(&client, selector.as_deref(), output, &mut out).await
                }
                Listed::Helmcharts => {
                    helm_chart::list(
                        &client,
                        namespace.as_deref(),
                        selector.as_deref(),
                        output,
                        &mut out,
                    )
                    .await
                }
            }
        }
        Command::Describe { name, output } => {
            let client = cli.cluster.client().await?;
            if let Some(request) = name.strip_prefix(operator_request::PREFIX) {
                describe_request::run(&client, request, output, &mut out).await
            } else if let Some(chart) = name.strip_prefix(helm_chart::PREFIX) {
                helm_chart::describe(&client, chart, output, &mut out).await
            } else if let Some(operator) = name.strip_prefix("operator/") {
                operators::describe(&client, operator, output, &mut out).await
            } else if let Some(package) = name.strip_prefix("clusterpackage/") {
                packages::describe(&client, package, false, output, &mut out).await
            } else if let Some(package) = name.strip_prefix("package/") {
                packages::describe(&client, package, true, output, &mut out).await
            } else {
                describe::run(&client, &name, output, &mut out).await
            }
        }
        Command::Why {
            name,
            output,
            resolver,
        } => {
            let client = cli.cluster.client().await?;
            if let Some(request) = name.strip_prefix(operator_request::PREFIX) {
                return why_request::run(&client, request, output, &mut out).await;
            }
            if let Some(chart) = name.strip_prefix(helm_chart::PREFIX) {
                return helm_chart::why(&client, chart, output, &mut out).await;
            }
            if let Some(package) = name.strip_prefix("clusterpackage/") {
                return why_package::run(&client, package, false, output, &mut out).await;
            }
            if let Some(package) = name.strip_prefix("package/") {
                return why_package::run(&client, package, true, output, &mut out).await;
            }
            if let Some(input) = name.strip_prefix("input/") {
                return match why_input::run(&client, input, output, &mut out).await? {
                    Some(()) => Ok(()),
                    None => Err(Error::NotFound {
                        kind: "input",
                        name: input.to_owned(),
                    }),
                };
            }
            let server = resolver.server();
            match why::run(&client, &name, output, server.as_ref(), &mut out).await {
                // No Instance of that name: an Input, maybe.
                Err(Error::NotFound {
                    kind,
                    name: missing,
                }) => match why_input::run(&client, &name, output, &mut out).await? {
                    Some(()) => Ok(()),
                    None => Err(Error::NotFound {
                        kind,
                        name: missing,
                    }),
                },
                other => other,
            }
        }
        Command::Plan {
            target,
            file,
            set,
            output,
            resolver,
        } => {
            let client = cli.cluster.client().await?;
            plan::run(
                &client,
                &target,
                file.as_deref(),
                plan::SetName(&set),
                resolver.server(),
                output,
                &mut out,
            )
            .await
        }
        Command::Approve {
            name,
            message,
            digest,
        } => {
            let client = cli.cluster.client().await?;
            let decision = approval::Decision::Approve;
            let request = approval::Request {
                note: message.as_deref(),
                digest: digest.as_deref(),
            };
            let name = instance_named(&client, name).await?;
            approval::run(&client, &name, decision, request, &mut out).await
        }
        Command::History { name, output } => {
            let client = cli.cluster.client().await?;
            history::history(&client, &name, output, &mut out).await
        }
        Command::Rollback { name, to_revision } => {
            let client = cli.cluster.client().await?;
            history::rollback(&client, &name, to_revision, &mut out).await
        }
        Command::Decide { name } => {
            let client = cli.cluster.client().await?;
            let name = name.strip_prefix("input/").unwrap_or(&name);
            decide::run(&client, name, &mut out).await
        }
        Command::Deny { name, message } => {
            let client = cli.cluster.client().await?;
            let decision = approval::Decision::Deny;
            let request = approval::Request {
                note: message.as_deref(),
                digest: None,
            };
            let name = instance_named(&client, name).await?;
            approval::run(&client, &name, decision, request, &mut out).await
        }
    }
}

/// An Instance's name, or the Instance installing
/// `operatorrequest/NAMESPACE/NAME` or `helmchart/NAMESPACE/NAME`.
async fn instance_named(client: &kube::Client, name: String) -> Result<String, Error> {
    if let Some(chart) = name.strip_prefix(helm_chart::PREFIX) {
        return helm_chart::instance_of(client, chart).await;
    }
    match name.strip_prefix(operator_request::PREFIX) {
        Some(request) => operator_request::instance_of(client, request).await,
        None => Ok(name),
    }
}
