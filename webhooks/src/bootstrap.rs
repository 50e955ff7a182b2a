//! `pakket-webhooks bootstrap`: the Secrets an installation needs that no
//! manifest may carry, made in the cluster the first time and reused after:
//!
//! - `pakket-record-key`: the key that seals requester records (random, 32
//!   bytes). Shipping it in a manifest would let anyone who read the
//!   manifest forge records.
//! - `pakket-registry-v1-certificate-key`: the key registry-v1 derives its
//!   operators' webhook certificates from (random, 32 bytes; key `key`).
//!   Every key has one purpose: the record key seals records and nothing
//!   else, so rotating it leaves operators' certificates alone, and a leak
//!   of one forges nothing of the other.
//! - `pakket-ca`: a private CA (ECDSA P-256, ten years), so a cluster needs
//!   no cert-manager (which stays supported: `deploy/cert-manager/`).
//! - one serving certificate per Service (`<service>-tls`, one year, for
//!   `<service>.<namespace>.svc` and `….svc.cluster.local`), issued again
//!   when it is missing, has under 30 days left, or was signed by another
//!   CA. Its Secret's annotations say when it ends and by which CA (the
//!   CA certificate's SHA-256), so no certificate has to be parsed.
//! - the CA as `caBundle` of every webhook in the named webhook
//!   configurations (server-side apply, a field manager of its own).
//!
//! The webhook Deployment runs it as an init container: every Pod start
//! checks, renews if due, and writes its own pair to an emptyDir the server
//! reads (and reloads) like any mounted certificate. Replicas starting at
//! once race on the creates; the loser reads the winner's Secret.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use sha2::{Digest as _, Sha256};

/// The record key's Secret (key `key`), as the Deployments mount it.
pub const RECORD_KEY_SECRET: &str = "pakket-record-key";
/// The record key Secret's entry holding the previous key during a
/// rotation (`key` holds the current one).
pub const PREVIOUS_RECORD_KEY: &str = "key.previous";
/// registry-v1's certificate key's Secret (key `key`), as its Deployment
/// mounts it.
pub const REGISTRY_V1_CERTIFICATE_KEY_SECRET: &str = "pakket-registry-v1-certificate-key";
/// The CA's Secret (`tls.crt`, `tls.key`).
pub const CA_SECRET: &str = "pakket-ca";
/// When a serving certificate's Secret says it ends (RFC 3339).
pub const NOT_AFTER_ANNOTATION: &str = "pakket.dev/not-after";
/// Which CA signed it: `sha256:` of the CA certificate's PEM.
pub const ISSUED_BY_ANNOTATION: &str = "pakket.dev/issued-by";
/// The field manager of the `caBundle` fields it writes.
const FIELD_MANAGER: &str = "pakket-webhooks-bootstrap";

const CA_COMMON_NAME: &str = "pakket-ca";
const CA_DAYS: i64 = 3650;
const SERVING_DAYS: i64 = 365;
/// A serving certificate with less left than this is issued again.
const RENEW_WITHIN_DAYS: i64 = 30;
/// How long to wait for the webhook configurations to exist (they are
/// applied with the Deployment, and may come a moment after its Pods).
const CONFIGURATIONS_WAIT: Duration = Duration::from_secs(120);

/// What to make.
#[derive(Clone, Debug)]
pub struct Request {
    /// The namespace of the Secrets and Services.
    pub namespace: String,
    /// Services that get a serving certificate; the first one's pair is
    /// written to `write_to`.
    pub services: Vec<String>,
    /// Where the first Service's `tls.crt` and `tls.key` go.
    pub write_to: Option<std::path::PathBuf>,
    /// Where the record key goes (file `key`): a Pod that makes the Secret
    /// cannot have mounted it, as volumes are mounted before init
    /// containers run.
    pub record_key_to: Option<std::path::PathBuf>,
    /// Validating and Mutating webhook configurations whose webhooks get
    /// the CA as `caBundle`.
    pub configurations: Vec<String>,
}

/// What was done, for the log.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Secrets made or renewed, by name.
    pub written: Vec<String>,
    /// Webhook configurations given the CA.
    pub configurations: Vec<String>,
}

/// Makes or reuses everything `request` names.
pub async fn run(client: &Client, request: &Request) -> anyhow::Result<Outcome> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &request.namespace);
    let mut outcome = Outcome::default();
    if created(
        &secrets,
        RECORD_KEY_SECRET,
        BTreeMap::from([("key".to_owned(), pakket_api::RecordKey::generate().1)]),
        BTreeMap::new(),
    )
    .await?
    {
        outcome.written.push(RECORD_KEY_SECRET.into());
    }
    // The same shape (32 random bytes, base64), for another purpose.
    if created(
        &secrets,
        REGISTRY_V1_CERTIFICATE_KEY_SECRET,
        BTreeMap::from([("key".to_owned(), pakket_api::RecordKey::generate().1)]),
        BTreeMap::new(),
    )
    .await?
    {
        outcome
            .written
            .push(REGISTRY_V1_CERTIFICATE_KEY_SECRET.into());
    }
    if let Some(folder) = &request.record_key_to {
        let secret = secrets.get(RECORD_KEY_SECRET).await?;
        write_files(folder, &[("key", &text(&secret, "key")?)])?;
        // A rotation's window: the previous key beside the current one
        // (`pakket_api::RecordKey::read` takes both), gone once the admin
        // removes it from the Secret.
        let previous = folder.join(PREVIOUS_RECORD_KEY);
        match secret
            .data
            .as_ref()
            .is_some_and(|data| data.contains_key(PREVIOUS_RECORD_KEY))
        {
            true => write_files(
                folder,
                &[(PREVIOUS_RECORD_KEY, &text(&secret, PREVIOUS_RECORD_KEY)?)],
            )?,
            false if previous.exists() => std::fs::remove_file(&previous)?,
            false => {}
        }
    }
    if request.services.is_empty() && request.configurations.is_empty() {
        // Certificates from elsewhere (cert-manager): the record key only.
        return Ok(outcome);
    }
    let ca = ensure_ca(&secrets, &mut outcome).await?;
    for (index, service) in request.services.iter().enumerate() {
        let pair = ensure_serving(&secrets, &ca, service, &request.namespace, &mut outcome).await?;
        if index == 0
            && let Some(folder) = &request.write_to
        {
            write_pair(folder, &pair)?;
        }
    }
    for name in &request.configurations {
        inject_ca(client, name, &ca.cert_pem).await?;
        outcome.configurations.push(name.clone());
    }
    Ok(outcome)
}

/// Creates Secret `name` unless it exists; whether this call made it.
async fn created(
    secrets: &Api<Secret>,
    name: &str,
    data: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
) -> anyhow::Result<bool> {
    if secrets.get_opt(name).await?.is_some() {
        return Ok(false);
    }
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/part-of".to_owned(),
                "pakket".to_owned(),
            )])),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..ObjectMeta::default()
        },
        string_data: Some(data),
        ..Secret::default()
    };
    match secrets.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(true),
        // Another replica made it first: theirs is as good.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error.into()),
    }
}

/// The CA: its certificate and key, PEM.
struct Ca {
    cert_pem: String,
    key_pem: String,
}

impl Ca {
    fn fingerprint(&self) -> String {
        format!(
            "sha256:{}",
            hex::encode(Sha256::digest(self.cert_pem.as_bytes()))
        )
    }

    /// The issuer, rebuilt from the key and the parameters it was made
    /// with (same name, same key): what signing needs, with no parsing.
    fn issuer(&self) -> anyhow::Result<Issuer<'static, KeyPair>> {
        let key = KeyPair::from_pem(&self.key_pem)?;
        Ok(Issuer::new(ca_params(0)?, key))
    }
}

fn ca_params(days: i64) -> anyhow::Result<CertificateParams> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, CA_COMMON_NAME);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    if days > 0 {
        params.not_before = at(0)?;
        params.not_after = at(days)?;
    }
    Ok(params)
}

/// Now plus `days`, as rcgen wants it.
fn at(days: i64) -> anyhow::Result<time::OffsetDateTime> {
    let seconds = jiff::Timestamp::now().as_second() + days * 86_400;
    Ok(time::OffsetDateTime::from_unix_timestamp(seconds)?)
}

async fn ensure_ca(secrets: &Api<Secret>, outcome: &mut Outcome) -> anyhow::Result<Ca> {
    if secrets.get_opt(CA_SECRET).await?.is_none() {
        let key = KeyPair::generate()?;
        let cert = ca_params(CA_DAYS)?.self_signed(&key)?;
        if created(
            secrets,
            CA_SECRET,
            BTreeMap::from([
                ("tls.crt".to_owned(), cert.pem()),
                ("tls.key".to_owned(), key.serialize_pem()),
            ]),
            BTreeMap::new(),
        )
        .await?
        {
            outcome.written.push(CA_SECRET.into());
        }
    }
    // Read back: if another replica won the race, its CA is the one.
    let secret = secrets.get(CA_SECRET).await?;
    Ok(Ca {
        cert_pem: text(&secret, "tls.crt")?,
        key_pem: text(&secret, "tls.key")?,
    })
}

/// A serving certificate and key, PEM.
struct Pair {
    cert_pem: String,
    key_pem: String,
    ca_pem: String,
}

async fn ensure_serving(
    secrets: &Api<Secret>,
    ca: &Ca,
    service: &str,
    namespace: &str,
    outcome: &mut Outcome,
) -> anyhow::Result<Pair> {
    let name = format!("{service}-tls");
    let existing = secrets.get_opt(&name).await?;
    if let Some(secret) = &existing
        && !due(secret, &ca.fingerprint())
    {
        return Ok(Pair {
            cert_pem: text(secret, "tls.crt")?,
            key_pem: text(secret, "tls.key")?,
            ca_pem: ca.cert_pem.clone(),
        });
    }
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ])?;
    params
        .distinguished_name
        .push(DnType::CommonName, format!("{service}.{namespace}.svc"));
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = at(0)?;
    params.not_after = at(SERVING_DAYS)?;
    let not_after = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_hours(SERVING_DAYS * 24))?
        .to_string();
    let cert = params.signed_by(&key, &ca.issuer()?)?;
    let pair = Pair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        ca_pem: ca.cert_pem.clone(),
    };
    let data = BTreeMap::from([
        ("tls.crt".to_owned(), pair.cert_pem.clone()),
        ("tls.key".to_owned(), pair.key_pem.clone()),
        ("ca.crt".to_owned(), pair.ca_pem.clone()),
    ]);
    let annotations = BTreeMap::from([
        (NOT_AFTER_ANNOTATION.to_owned(), not_after),
        (ISSUED_BY_ANNOTATION.to_owned(), ca.fingerprint()),
    ]);
    match existing {
        None => {
            if !created(secrets, &name, data, annotations).await? {
                // Another replica issued it a moment ago: use theirs.
                let secret = secrets.get(&name).await?;
                return Ok(Pair {
                    cert_pem: text(&secret, "tls.crt")?,
                    key_pem: text(&secret, "tls.key")?,
                    ca_pem: ca.cert_pem.clone(),
                });
            }
        }
        Some(mut secret) => {
            // Replace, guarded by the resourceVersion read: a replica that
            // renewed first wins, and this one retries at its next start.
            secret.string_data = Some(data);
            secret.data = None;
            secret
                .metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .extend(annotations);
            secrets
                .replace(&name, &PostParams::default(), &secret)
                .await?;
        }
    }
    outcome.written.push(name);
    Ok(pair)
}

/// Whether the serving certificate in `secret` must be issued again.
fn due(secret: &Secret, ca_fingerprint: &str) -> bool {
    let annotations = secret.metadata.annotations.clone().unwrap_or_default();
    let whole = ["tls.crt", "tls.key"].iter().all(|key| {
        secret
            .data
            .as_ref()
            .is_some_and(|data| data.contains_key(*key))
    });
    let same_ca = annotations.get(ISSUED_BY_ANNOTATION).map(String::as_str) == Some(ca_fingerprint);
    let lasts = annotations
        .get(NOT_AFTER_ANNOTATION)
        .and_then(|text| text.parse::<jiff::Timestamp>().ok())
        .is_some_and(|end| {
            end.duration_since(jiff::Timestamp::now())
                > jiff::SignedDuration::from_hours(RENEW_WITHIN_DAYS * 24)
        });
    !(whole && same_ca && lasts)
}

fn text(secret: &Secret, key: &str) -> anyhow::Result<String> {
    let name = secret.metadata.name.as_deref().unwrap_or_default();
    let bytes = secret
        .data
        .as_ref()
        .and_then(|data| data.get(key))
        .ok_or_else(|| {
            anyhow::anyhow!("Secret {name} has no {key}; delete it to have it made again")
        })?;
    String::from_utf8(bytes.0.clone()).map_err(|_| {
        anyhow::anyhow!("Secret {name}: {key} is not PEM text; delete it to have it made again")
    })
}

fn write_pair(folder: &Path, pair: &Pair) -> anyhow::Result<()> {
    write_files(
        folder,
        &[
            ("tls.key", &pair.key_pem),
            ("tls.crt", &pair.cert_pem),
            ("ca.crt", &pair.ca_pem),
        ],
    )
}

/// Writes each file whole (a rename), so a reader never sees half of one.
fn write_files(folder: &Path, files: &[(&str, &str)]) -> anyhow::Result<()> {
    std::fs::create_dir_all(folder)?;
    for (file, contents) in files {
        crate::local::ca::write_atomically(&folder.join(file), contents.as_bytes())?;
    }
    Ok(())
}

/// Sets `caBundle` on every webhook of the configurations called `name`
/// (a Validating and a Mutating one, whichever exist), waiting for them.
async fn inject_ca(client: &Client, name: &str, ca_pem: &str) -> anyhow::Result<()> {
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + CONFIGURATIONS_WAIT;
    loop {
        let found_validating = validating.get_opt(name).await?;
        let found_mutating = mutating.get_opt(name).await?;
        if found_validating.is_none() && found_mutating.is_none() {
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "no webhook configuration {name} appeared within {} s; apply deploy/ whole",
                CONFIGURATIONS_WAIT.as_secs()
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        let bundle = ByteString(ca_pem.as_bytes().to_vec());
        let params = PatchParams::apply(FIELD_MANAGER).force();
        if let Some(found) = found_validating {
            let names: Vec<String> = found
                .webhooks
                .iter()
                .flatten()
                .map(|w| w.name.clone())
                .collect();
            validating
                .patch(
                    name,
                    &params,
                    &Patch::Apply(bundle_patch(
                        "ValidatingWebhookConfiguration",
                        name,
                        &names,
                        &bundle,
                    )),
                )
                .await?;
        }
        if let Some(found) = found_mutating {
            let names: Vec<String> = found
                .webhooks
                .iter()
                .flatten()
                .map(|w| w.name.clone())
                .collect();
            mutating
                .patch(
                    name,
                    &params,
                    &Patch::Apply(bundle_patch(
                        "MutatingWebhookConfiguration",
                        name,
                        &names,
                        &bundle,
                    )),
                )
                .await?;
        }
        return Ok(());
    }
}

/// An apply patch that owns only `caBundle` of each named webhook (the
/// webhooks list is keyed by name, so the rest stays the manifest's).
fn bundle_patch(
    kind: &str,
    name: &str,
    webhooks: &[String],
    bundle: &ByteString,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": { "name": name },
        "webhooks": webhooks.iter().map(|webhook| serde_json::json!({
            "name": webhook,
            "clientConfig": { "caBundle": bundle },
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(annotations: &[(&str, String)], keys: &[&str]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("s".into()),
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), v.clone()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            data: Some(
                keys.iter()
                    .map(|k| ((*k).to_owned(), ByteString(b"x".to_vec())))
                    .collect(),
            ),
            ..Secret::default()
        }
    }

    fn in_days(days: i64) -> String {
        jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_hours(days * 24))
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_certificate_is_issued_again_when_near_its_end_from_another_ca_or_partial() {
        let good = [
            (NOT_AFTER_ANNOTATION, in_days(200)),
            (ISSUED_BY_ANNOTATION, "sha256:ca".to_owned()),
        ];
        assert!(!due(&secret(&good, &["tls.crt", "tls.key"]), "sha256:ca"));
        assert!(
            due(&secret(&good, &["tls.crt", "tls.key"]), "sha256:other"),
            "another CA"
        );
        assert!(due(&secret(&good, &["tls.crt"]), "sha256:ca"), "no key");
        let ending = [
            (NOT_AFTER_ANNOTATION, in_days(10)),
            (ISSUED_BY_ANNOTATION, "sha256:ca".to_owned()),
        ];
        assert!(
            due(&secret(&ending, &["tls.crt", "tls.key"]), "sha256:ca"),
            "10 days left"
        );
        assert!(
            due(&secret(&[], &["tls.crt", "tls.key"]), "sha256:ca"),
            "unannotated"
        );
    }

    #[test]
    fn a_serving_certificate_chains_to_the_ca_rebuilt_from_its_key() {
        use rustls::client::danger::ServerCertVerifier as _;
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        let key = KeyPair::generate().unwrap();
        let ca_cert = ca_params(CA_DAYS).unwrap().self_signed(&key).unwrap();
        let ca = Ca {
            cert_pem: ca_cert.pem(),
            key_pem: key.serialize_pem(),
        };
        let leaf_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["x.ns.svc".to_owned()]).unwrap();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let leaf = params.signed_by(&leaf_key, &ca.issuer().unwrap()).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.cert_pem.as_bytes()).unwrap())
            .unwrap();
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            std::sync::Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        let name = rustls::pki_types::ServerName::try_from("x.ns.svc").unwrap();
        verifier
            .verify_server_cert(
                &CertificateDer::from_pem_slice(leaf.pem().as_bytes()).unwrap(),
                &[],
                &name,
                &[],
                rustls::pki_types::UnixTime::now(),
            )
            .expect("the leaf verifies against the CA");
    }
}
