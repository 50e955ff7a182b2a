//! What a provisioner author writes: an id, how unpacked content becomes
//! Kubernetes objects, and (optionally) the approval policies it adds. The
//! runtime does the rest (watching, unpacking, approval, apply, pivot,
//! status).

use std::collections::BTreeSet;
use std::future::Future;
use std::path::Path;

use pakket_api::Instance;
use serde_json::{Map, Value};

use crate::approval::{Approval, ApprovalRequest};

/// What a provisioner is told when it turns content into objects.
pub struct ObjectsRequest<'a> {
    /// The unpacked content.
    pub content: &'a Path,
    /// The class's `maxObjectSize`, in bytes per file.
    pub max_object_size: u64,
    /// The Instance being installed (its name, its `spec.config`).
    pub instance: &'a Instance,
    /// What the cluster runs and serves.
    pub cluster: &'a ClusterFacts,
    /// The ProvisionerClass's `spec.parameters` (an admin's settings for
    /// every Instance of the class), if it has any.
    pub class_parameters: Option<&'a Map<String, Value>>,
}

impl ObjectsRequest<'_> {
    /// The Instance's `spec.config`, if it has one.
    pub fn config(&self) -> Option<&Map<String, Value>> {
        self.instance.spec.config.as_ref()
    }
}

/// Facts about the cluster a provisioner may need to render objects: its
/// version and served kinds (refreshed every few minutes) and what other
/// Instances have installed (as of this reconcile).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterFacts {
    /// The apiserver's version (major, minor), when it could be read.
    pub version: Option<(u32, u32)>,
    /// Every served kind, as (`group/version` or `version`, kind).
    pub served: BTreeSet<(String, String)>,
    /// The served kinds that are cluster-scoped (from discovery), in the
    /// same form.
    pub cluster_scoped: BTreeSet<(String, String)>,
    /// The other Instances that are installed, with what their content
    /// provides: what dependencies are checked against.
    pub installed: Vec<InstalledContent>,
}

/// One installed Instance and the properties of its active Bundle.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InstalledContent {
    /// The Instance's name.
    pub instance: String,
    /// Its active Bundle.
    pub bundle: String,
    /// What that Bundle's provisioner said it provides and requires
    /// (`Bundle.status.properties`).
    pub properties: Vec<pakket_api::BundleProperty>,
}

impl ClusterFacts {
    /// Whether the cluster serves `kind` in `api_version`.
    pub fn serves(&self, api_version: &str, kind: &str) -> bool {
        self.served
            .contains(&(api_version.to_owned(), kind.to_owned()))
    }

    /// Whether `object` is namespaced: as the cluster serves its kind
    /// (discovery), else as a CRD among `objects` defines it. A kind
    /// neither knows is an error naming it: its scope is never guessed.
    pub fn namespaced(&self, object: &Value, objects: &[Value]) -> Result<bool, String> {
        let reference = crate::apply::reference_of(object);
        let key = (reference.api_version.clone(), reference.kind.clone());
        if self.served.contains(&key) {
            return Ok(!self.cluster_scoped.contains(&key));
        }
        let group = reference
            .api_version
            .split_once('/')
            .map_or("", |(group, _)| group);
        crate::apply::defined_resource(objects, group, &reference.kind)
            .map(|(_, namespaced)| namespaced)
            .ok_or_else(|| {
                format!(
                    "{} {} ({}) is not served by this cluster and no CRD in the content defines it, so whether it is namespaced is unknown; install the API that serves it first",
                    reference.kind, reference.name, reference.api_version
                )
            })
    }
}

/// Why content or config did not turn into objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectsError {
    /// The content is wrong (a manifest, a missing file): the Instance's
    /// `Installed` condition says `RenderFailed` with it (its `Unpacked`
    /// stays True: the content was fetched fine), and the Bundle's status
    /// records it. Name the file and what is wrong, in words.
    Content(String),
    /// A field of the Instance's `spec.config` is wrong: it reaches the
    /// Instance's `Installed` condition (reason `InvalidConfig`); the
    /// Bundle is fine.
    Config {
        /// The field, as `spec.config.watchNamespaces[1]`.
        field: String,
        /// What is wrong and what to write instead.
        problem: String,
    },
    /// The content needs packages or APIs that nothing installed provides:
    /// it reaches the Instance's `Installed` condition (reason
    /// `DependenciesMissing`) with this explanation, and nothing is applied.
    DependenciesMissing(String),
}

impl std::fmt::Display for ObjectsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Content(message) => f.write_str(message),
            Self::Config { field, problem } => write!(f, "{field}: {problem}"),
            Self::DependenciesMissing(explanation) => f.write_str(explanation),
        }
    }
}

/// A provisioner: the runtime acts only on Instances whose ProvisionerClass
/// names this provisioner's id.
pub trait Provisioner: Send + Sync + 'static {
    /// The unique id, e.g. `pakket.dev/plain`.
    fn id(&self) -> &str;

    /// Whether [`ObjectsRequest::cluster`] should say what the cluster
    /// serves and what the other Instances installed. Gathering that walks
    /// every Instance the provisioner caches, on every reconcile, so a
    /// provisioner that does not read it says `false` (the default) and
    /// gets empty facts.
    fn needs_cluster_facts(&self) -> bool {
        false
    }

    /// Pakket's own kinds (any `*.pakket.dev` group) this provisioner's
    /// objects may hold: child Instances, for one that installs through
    /// other provisioners. Content holding any other Pakket kind is refused
    /// by the runtime, naming the object; each declared child carries the
    /// parent's requester (or the person the provisioner sealed it for), so
    /// it is judged by that person's rights, never the provisioner's
    /// ([`crate::trust::children`]). Such a provisioner must be one of the
    /// admission webhooks' delegates. The default makes none.
    fn pakket_kinds(&self) -> &[crate::trust::children::PakketKind] {
        &[]
    }

    /// The objects the unpacked content stands for, for this Instance
    /// (its config) on this cluster.
    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError>;

    /// When the objects rendered for `request` change by themselves, with
    /// nothing else changing (a serving certificate that rotates). The
    /// runtime renders and applies them again by then, instead of at its
    /// next resync (an hour). The default: never; objects change only with
    /// the content, the Instance, the class or the cluster.
    fn renders_again_at(&self, request: &ObjectsRequest<'_>) -> Option<std::time::SystemTime> {
        let _ = request;
        None
    }

    /// The fields of `object` (JSON pointers) that the provisioner itself
    /// issues and renews, with nothing anyone asked for changing (a serving
    /// certificate and key it rotates). An approval covers what was judged,
    /// rendered objects included; a render that differs from the approved
    /// one only in these fields stays approved
    /// ([`crate::trust::decision_key`]). Name only what the provisioner
    /// makes itself, never a field content or config can set. The default:
    /// none.
    fn issued_material(&self, object: &Value) -> Vec<&'static str> {
        let _ = object;
        Vec::new()
    }

    /// What the content provides and requires, as File-Based Catalog
    /// properties (`olm.package`, `olm.gvk`, ...), written to the Bundle's
    /// status so that other Instances' dependencies can be checked against
    /// it. Called once the objects rendered; the default says nothing.
    fn properties(&self, request: &ObjectsRequest<'_>) -> Vec<pakket_api::BundleProperty> {
        let _ = request;
        Vec::new()
    }

    /// Decides approval under a class whose `approval` parameter is not
    /// `AllowAll` (which the runtime applies itself), unless a person has
    /// approved or denied already. The default is
    /// [`crate::approval::standard`]: `UserPermission` and `Android`, and a
    /// person for any other policy. Override it only to add a policy of
    /// your own, falling back to `standard` for the rest.
    fn approve(&self, request: &ApprovalRequest<'_>) -> impl Future<Output = Approval> + Send {
        crate::approval::standard(request)
    }
}

/// The simplest provisioner: the content is a directory of plain manifests.
#[derive(Clone, Debug)]
pub struct Plain {
    id: String,
}

impl Plain {
    /// A plain-manifests provisioner answering to `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }
}

impl Provisioner for Plain {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        crate::manifest::load_objects(request.content, request.max_object_size)
            .map_err(|error| ObjectsError::Content(error.to_string()))
    }
}

/// The first field of an Instance's `spec.config` a provisioner does not
/// read, as the field (`spec.config.NAME`) and what to do; `reader` names
/// the provisioner in the words ("registry-v1"). Nothing falls back
/// silently: a misspelled field is refused, not ignored.
pub fn unread_config_field(
    config: &Map<String, Value>,
    known: &[&str],
    reader: &str,
) -> Option<(String, String)> {
    let unknown = config.keys().find(|key| !known.contains(&key.as_str()))?;
    Some((
        format!("spec.config.{unknown}"),
        format!(
            "{reader} reads only {}; remove it or fix its spelling",
            known.join(", ")
        ),
    ))
}
