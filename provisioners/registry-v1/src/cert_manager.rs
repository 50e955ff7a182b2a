//! Webhook serving certificates issued by cert-manager, when the Instance
//! asks for it (`spec.config.certificateProvider: CertManager`).
//!
//! Pakket renders the cert-manager objects and cert-manager makes the
//! Secrets; nothing here holds a key.
//!
//! | object | name | what it is |
//! |---|---|---|
//! | Issuer | `<package>-selfsigned-issuer` | `selfSigned`: signs the CA only |
//! | Certificate | `<package>-webhook-ca` | the package's CA (`isCA`, 10 years), in the Secret of the same name |
//! | Issuer | `<package>-webhook-ca` | `ca`: signs the serving certificates with that Secret |
//! | Certificate, per Deployment serving webhooks | `<deployment>-service-cert` | the serving certificate, in the Secret the Deployment mounts, for `<service>.<namespace>`, `….svc`, `….svc.cluster.local`, `server auth`, 2 years renewed a day before (operator-controller's OLM v0 parity figures) |
//!
//! The webhook configurations and conversion CRDs get
//! `cert-manager.io/inject-ca-from: <namespace>/<deployment>-service-cert`
//! instead of a `caBundle`, so cert-manager's cainjector writes the CA
//! there. operator-controller signs each serving certificate with a
//! self-signed Issuer directly; a CA in between keeps the injected
//! `caBundle` the same when a serving certificate is renewed, so no
//! webhook call fails between the renewal and the next injection.
//!
//! Names use the package, not the CSV, so an upgrade keeps the same CA.

use pakket_runtime::ClusterFacts;
use serde_json::{Value, json};

use crate::webhooks::{name_with_suffix, secret_name, service_name};

/// The annotation cert-manager's cainjector reads.
pub const INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";
/// The API version of the Issuers and Certificates rendered.
pub const API_VERSION: &str = "cert-manager.io/v1";
/// How long a serving certificate lasts, and how long before its end
/// cert-manager renews it (operator-controller's figures, as
/// `metav1.Duration` writes them).
pub const SERVING_DURATION: &str = "17520h0m0s";
/// See [`SERVING_DURATION`].
pub const SERVING_RENEW_BEFORE: &str = "24h0m0s";
/// How long the CA lasts (as Pakket's own CA: 10 years).
pub const CA_DURATION: &str = "87600h0m0s";

/// Whether the cluster serves what these objects need.
pub fn served(cluster: &ClusterFacts) -> bool {
    cluster.serves(API_VERSION, "Certificate") && cluster.serves(API_VERSION, "Issuer")
}

/// The self-signed Issuer.
pub fn self_signed_issuer_name(package: &str) -> String {
    name_with_suffix(package, "selfsigned-issuer")
}

/// The CA Certificate, its Secret, and the Issuer that signs with it.
pub fn ca_name(package: &str) -> String {
    name_with_suffix(package, "webhook-ca")
}

/// The self-signed Issuer, the CA Certificate and the CA Issuer of
/// `package` in `namespace`.
pub fn authority(package: &str, namespace: &str) -> [Value; 3] {
    let self_signed = self_signed_issuer_name(package);
    let ca = ca_name(package);
    let mut common_name = format!("{package} webhook CA");
    // cert-manager refuses a commonName over 64 characters.
    common_name.truncate(64);
    [
        json!({
            "apiVersion": API_VERSION,
            "kind": "Issuer",
            "metadata": { "name": self_signed, "namespace": namespace },
            "spec": { "selfSigned": {} },
        }),
        json!({
            "apiVersion": API_VERSION,
            "kind": "Certificate",
            "metadata": { "name": ca, "namespace": namespace },
            "spec": {
                "isCA": true,
                "commonName": common_name,
                "secretName": ca,
                "duration": CA_DURATION,
                "issuerRef": { "name": self_signed, "kind": "Issuer", "group": "cert-manager.io" },
            },
        }),
        json!({
            "apiVersion": API_VERSION,
            "kind": "Issuer",
            "metadata": { "name": ca, "namespace": namespace },
            "spec": { "ca": { "secretName": ca } },
        }),
    ]
}

/// The serving Certificate of `deployment`'s webhook Service, named as the
/// Secret it writes (the one the Deployment mounts).
pub fn serving_certificate(package: &str, deployment: &str, namespace: &str) -> Value {
    let name = secret_name(deployment);
    let service = service_name(deployment);
    let short = format!("{service}.{namespace}");
    let mut spec = json!({
        "secretName": name,
        "dnsNames": [
            short,
            format!("{short}.svc"),
            format!("{short}.svc.cluster.local"),
        ],
        "usages": ["server auth"],
        "isCA": false,
        "duration": SERVING_DURATION,
        "renewBefore": SERVING_RENEW_BEFORE,
        "issuerRef": { "name": ca_name(package), "kind": "Issuer", "group": "cert-manager.io" },
    });
    // cert-manager refuses a commonName over 64 characters; the dnsNames
    // are what clients check.
    if short.len() <= 64 {
        spec["commonName"] = json!(short);
    }
    json!({
        "apiVersion": API_VERSION,
        "kind": "Certificate",
        "metadata": { "name": name, "namespace": namespace },
        "spec": spec,
    })
}

/// Asks cainjector to write the CA of `deployment`'s serving Certificate
/// into `object` (a webhook configuration or a CRD).
pub fn inject_ca_from(object: &mut Value, namespace: &str, deployment: &str) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(
            INJECT_CA_FROM.into(),
            json!(format!("{namespace}/{}", secret_name(deployment))),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_fit_and_long_common_names_are_left_out() {
        let package = "p".repeat(70);
        assert!(ca_name(&package).len() <= 63);
        assert!(self_signed_issuer_name(&package).len() <= 63);
        let certificate = serving_certificate(&package, &"d".repeat(60), "ns");
        assert!(certificate.pointer("/spec/commonName").is_none());
        let short = serving_certificate("p", "op", "ns");
        assert_eq!(short["spec"]["commonName"], "op-service.ns");
        assert_eq!(short["metadata"]["name"], "op-service-cert");
    }

    #[test]
    fn inject_ca_from_keeps_other_annotations() {
        let mut crd = json!({ "metadata": { "name": "x", "annotations": { "a": "b" } } });
        inject_ca_from(&mut crd, "ns", "op");
        assert_eq!(
            crd["metadata"]["annotations"],
            json!({ "a": "b", INJECT_CA_FROM: "ns/op-service-cert" })
        );
    }
}
