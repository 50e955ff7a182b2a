//! # Writing a provisioner
//!
//! A provisioner turns a Bundle's unpacked content into Kubernetes
//! objects. Everything around that is this runtime's: it watches the
//! Instances whose ProvisionerClass names your id, unpacks their content
//! into a store keyed by digest, decides approval, applies the objects
//! with server-side apply in phases, each waiting for the probes of the
//! one before (a server-side dry run of the whole set first), pivots and prunes, reports health, revisions and
//! Events, repairs drift, elects a leader and serves probes and metrics.
//!
//! ## What you write
//!
//! A type that implements [`Provisioner`](crate::Provisioner):
//! - [`id`](crate::Provisioner::id): what `ProvisionerClass.spec.provisioner`
//!   names (`example.com/properties`).
//! - [`objects`](crate::Provisioner::objects): the objects of the content
//!   in [`ObjectsRequest::content`](crate::ObjectsRequest::content), a
//!   directory. The request also carries the Instance (its `spec.config`
//!   holds the settings a user gives your provisioner), the class's
//!   parameters, and what the cluster serves
//!   ([`needs_cluster_facts`](crate::Provisioner::needs_cluster_facts)
//!   turns that on). Read files no bigger than
//!   [`max_object_size`](crate::ObjectsRequest::max_object_size).
//!   Plain manifests load with
//!   [`manifest::load_objects`](crate::manifest::load_objects); any other
//!   file of the content (metadata, settings) with
//!   [`manifest::read_document`](crate::manifest::read_document), which
//!   reads only inside the content, within the size limit, and names the
//!   file, line and column of a syntax error.
//! - Optionally [`properties`](crate::Provisioner::properties) (what the
//!   content provides others), [`approve`](crate::Provisioner::approve)
//!   (a policy of your own; the default applies `AllowAll`, `DenyAll`,
//!   `UserPermission` and `Android`, and asks a person for anything else;
//!   an admin's `approval: Policy` is the runtime's, before `approve` is
//!   asked), [`renders_again_at`](crate::Provisioner::renders_again_at)
//!   (only if your objects change by themselves, such as a certificate
//!   you issue that rotates),
//!   and [`pakket_kinds`](crate::Provisioner::pakket_kinds) (only if your
//!   content makes Pakket's own kinds; each child is then judged by its
//!   parent's requester).
//!
//! An error says what is wrong in words, naming the file or field, and
//! decides the condition the Instance shows:
//! [`ObjectsError::Content`](crate::ObjectsError::Content) is
//! `Installed=False/RenderFailed` (fix the content; new content is a new
//! Bundle), [`ObjectsError::Config`](crate::ObjectsError::Config) is
//! `InvalidConfig` naming the Instance's field, and
//! [`ObjectsError::DependenciesMissing`](crate::ObjectsError::DependenciesMissing)
//! waits until what the content needs is installed. Nothing is applied in
//! any of these cases, and what runs stays as it is.
//!
//! ## What an approval covers
//!
//! An approval (a person's `kubectl instance approve`, or the class's
//! policy) names the Bundle and its content digest, and the runtime
//! records the digest of the objects you rendered from it. Other bytes
//! under the same name wait for a new approval. If a new version of your
//! provisioner renders the same content to other objects, the runtime
//! compares them with what runs, and more rights wait for a person. So a
//! change to `objects` is safe to ship: it never widens what was approved
//! without somebody seeing it.
//!
//! ## A whole provisioner
//!
//! `examples/author` is a provisioner written outside Pakket's workspace,
//! as you would write one: Bundles of `.properties` files, each installed
//! as a ConfigMap. `dev/test.sh` builds it, lints it and runs its tests
//! (one on a real control plane), so what follows is the API as it is.
//! Its `src/lib.rs`:
//!
#![doc = concat!("```rust,ignore\n", include_str!("../../../examples/author/src/lib.rs"), "```\n")]
//!
//! Its `src/main.rs` gives the provisioner the flags every provisioner
//! has ([`cli::ProvisionerArgs`](crate::cli::ProvisionerArgs)) and hands
//! it to [`cli::run`](crate::cli::run):
//!
#![doc = concat!("```rust,ignore\n", include_str!("../../../examples/author/src/main.rs"), "```\n")]
//!
//! ## Running it locally
//!
//! ```sh
//! cargo run -q -p pakket-controlplane --bin pakket-dev -- --dir /tmp/dev up --nodes 1
//! export KUBECONFIG=/tmp/dev/kubeconfig
//! kubectl apply --server-side -f crds/             # Pakket's CRDs (the kubectl pakket-dev printed)
//! cargo run --manifest-path examples/author/Cargo.toml -- --lease-namespace default
//! ```
//!
//! Then create a ProvisionerClass naming `example.com/properties` and an
//! Instance of it; `kubectl instance why NAME` says what it waits for.
//!
//! ## Testing it
//!
//! [`controller::run_with`](crate::kernel::controller::run_with) runs the
//! controller in your test, against the real control plane that
//! `pakket-testkit` starts (or the one `PAKKET_TEST_KUBECONFIG` names);
//! `examples/author/tests/install.rs` is such a test.
//!
//! ## Shipping it
//!
//! `deploy/plain/provisioner.yaml` is the template: a Deployment running
//! as its own ServiceAccount, and the RBAC a provisioner needs (its
//! Instances and Bundles and their status, Events, its Lease, and the
//! kinds its content installs). Give it `use` on its own classes only.
//! The admission webhooks (`deploy/webhooks`) record who asked for each
//! Instance; mount their record key (`--record-key-file`) so that
//! `UserPermission`, `Android` and `Policy` can approve. A class with
//! `approval: Policy` needs `get`, `list` and `watch` on
//! `approvalpolicies` (the template has them).
