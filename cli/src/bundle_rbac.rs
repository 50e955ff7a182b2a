//! `pakket bundle rbac DIR|REF`: the RBAC a user needs so that an Instance of
//! this registry+v1 bundle installs under `approval: UserPermission`, as a
//! ClusterRole (cluster-scoped objects, ClusterRoles' rules) and a Role per
//! namespace (namespaced objects, Roles' rules), ready to apply and bind
//! (see `pakket_runtime::kernel::trust::install_rbac`). An image ref is pulled and
//! unpacked the way a provisioner does it (`content::unpack`, the same
//! archive checks and limits), into a store that is removed afterwards.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use pakket_api::{BundleTemplate, Instance, InstanceSpec};
use pakket_registry_v1::RegistryV1;
use pakket_runtime::kernel::content::{self, ImageSources, UnpackOptions};
use pakket_runtime::kernel::store::Store;
use pakket_runtime::kernel::trust::install_rbac::needed_roles;
use pakket_runtime::{ClusterFacts, ObjectsRequest, Provisioner};
use serde_json::json;

/// Arguments of `pakket bundle rbac`.
#[derive(Args)]
pub struct RbacArgs {
    /// The registry+v1 bundle: a directory (`manifests/`, `metadata/`) or
    /// an image ref (`docker://HOST/REPO:TAG`, `oci://…`; plain HTTP only to
    /// loopback registries).
    bundle: String,
    /// Where the operator would run, as the Instance's `spec.config.installNamespace`.
    #[arg(long)]
    install_namespace: Option<String>,
    /// What it would watch, as `spec.config.watchNamespaces` (comma-separated).
    #[arg(long, value_delimiter = ',')]
    watch_namespaces: Vec<String>,
    /// Name of the ClusterRole and Roles printed.
    #[arg(long, default_value = "pakket-install")]
    name: String,
}

/// Runs `pakket bundle rbac`; exit status 0, or 2 for a bundle that does
/// not render (the reason on stderr).
pub fn run(args: &RbacArgs) -> u8 {
    match render(args) {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err(message) => {
            eprintln!("pakket bundle rbac: {message}");
            2
        }
    }
}

/// The bundle's directory: `args.bundle` itself, or the image it names
/// pulled and unpacked under `scratch`.
fn bundle_dir(bundle: &str, scratch: &Path) -> Result<PathBuf, String> {
    let path = PathBuf::from(bundle);
    if path.is_dir() {
        return Ok(path);
    }
    if !bundle.contains("://") {
        return Err(format!(
            "{bundle} is neither a bundle directory nor an image ref (docker://HOST/REPO:TAG)"
        ));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the async runtime: {error}"))?;
    runtime.block_on(async {
        // Image refs need no cluster: the client is never called.
        let client = kube::Client::try_from(kube::Config::new(
            "http://127.0.0.1:1".parse().expect("a valid URL"),
        ))
        .map_err(|error| format!("cannot make a client: {error}"))?;
        let store =
            Arc::new(Store::open(scratch.to_path_buf()).map_err(|error| {
                format!("cannot open a store in {}: {error}", scratch.display())
            })?);
        let spec = pakket_api::BundleSpec {
            class: "registry-v1".into(),
            refs: vec![bundle.to_owned()],
            volume_mounts: Vec::new(),
        };
        // The user's own machine pulls, with her own reach: an internal
        // registry is hers to name (the guard is for provisioners).
        let options = UnpackOptions {
            allow_internal_addresses: true,
            ..UnpackOptions::default()
        };
        content::unpack(&client, &spec, &store, &ImageSources::default(), &options)
            .await
            .map(|unpacked| unpacked.dir)
            .map_err(|error| error.to_string())
    })
}

/// The roles as YAML, or why the bundle does not render.
fn render(args: &RbacArgs) -> Result<String, String> {
    let scratch =
        tempfile::tempdir().map_err(|error| format!("cannot make a scratch directory: {error}"))?;
    let dir = bundle_dir(&args.bundle, scratch.path())?;
    let mut config = serde_json::Map::new();
    if let Some(namespace) = &args.install_namespace {
        config.insert("installNamespace".into(), json!(namespace));
    }
    if !args.watch_namespaces.is_empty() {
        config.insert("watchNamespaces".into(), json!(args.watch_namespaces));
    }
    let instance = Instance::new(
        "bundle",
        InstanceSpec {
            class: "registry-v1".into(),
            selector: None,
            bundle: BundleTemplate {
                name: "bundle".into(),
                spec: None,
            },
            deletion_policy: Default::default(),
            config: Some(config),
            progress_deadline: None,
            drift: None,
        },
    );
    let objects = RegistryV1::new(pakket_registry_v1::ID)
        .objects(&ObjectsRequest {
            content: &dir,
            max_object_size: 4 << 20,
            instance: &instance,
            cluster: &ClusterFacts::default(),
            class_parameters: None,
        })
        .map_err(|error| error.to_string())?;
    let mut documents = Vec::new();
    for needed in needed_roles(&objects, &args.name) {
        let mut text = String::new();
        if !needed.guessed.is_empty() {
            text.push_str(&format!(
                "# plurals guessed (no cluster was asked): {}\n",
                needed.guessed.join(", ")
            ));
        }
        text.push_str(&serde_saphyr::to_string(&needed.role).map_err(|error| error.to_string())?);
        documents.push(text);
    }
    Ok(format!(
        "# What a user needs so that an Instance of {} installs under approval: UserPermission\n\
         # (besides create on instances.core.pakket.dev and use on the class). Bind these to the user.\n{}",
        args.bundle,
        documents.join("---\n")
    ))
}
