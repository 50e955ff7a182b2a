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
//!   asked; when your policy hands a request to a person, return
//!   [`ApprovalRequest::ask_a_person`](crate::approval::ApprovalRequest::ask_a_person)
//!   with what it saw), [`renders_again_at`](crate::Provisioner::renders_again_at)
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
//! # The record key, and the admission webhooks that seal who asked with it
//! # (they register themselves on loopback and remove their configurations
//! # when stopped):
//! (umask 077 && head -c 32 /dev/urandom | base64 > /tmp/dev.record-key)
//! cargo run -q -p pakket-webhooks -- local --name dev --record-key-file /tmp/dev.record-key &
//! cargo run --manifest-path examples/author/Cargo.toml -- \
//!   --lease-namespace default --store /tmp/dev.store --record-key-file /tmp/dev.record-key
//! ```
//!
//! Without the webhooks nobody's request is recorded, and without the
//! key your provisioner cannot verify a record: either way `UserPermission`,
//! `Android` and `Policy` never approve, and every Instance waits for a
//! person (`kubectl instance why NAME` says which is missing). `--help`
//! lists every flag (`cli::ProvisionerArgs`).
//!
//! Then create a ProvisionerClass naming `example.com/properties` and an
//! Instance of it; `kubectl instance why NAME` says what it waits for.
//!
//! Content comes from an OCI image (`docker://…`, the way to ship a
//! tree of files), an `https://` tarball, a `git+https://` ref, or a
//! ConfigMap (`file://`, for a handful of files while you try things): a
//! ConfigMap's keys are file names, so its content is one flat folder
//! with no subfolders, and at most about 1 MiB. The ConfigMap must be
//! `immutable: true` and labelled `core.pakket.dev/bundle-content: "true"`
//! ([`pakket_api::BUNDLE_CONTENT_LABEL`]); an unlabelled one is never read.
//!
//! Copying `examples/author` out of this repository: its `Cargo.toml`
//! names `pakket-runtime` by path; point it at your copy (or a git
//! dependency) and let cargo write a new `Cargo.lock` (`cargo
//! generate-lockfile`) before building with `--locked`. The example's
//! lock file describes this repository's path dependencies, not yours.
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
