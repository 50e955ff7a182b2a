//! The certificates and keys of one control plane: a private CA, serving
//! certificates for etcd and the apiserver, client certificates for every
//! component that talks to another, and the service-account signing key.
//!
//! Everything is generated fresh for each control plane (ECDSA P-256, ring),
//! so no key is shared between runs or committed anywhere.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

/// A PEM certificate and key written to disk.
#[derive(Clone, Debug)]
pub struct CertFiles {
    /// Certificate, PEM.
    pub cert: PathBuf,
    /// Private key, PEM (PKCS#8).
    pub key: PathBuf,
}

/// Paths of every credential the control plane uses.
#[derive(Clone, Debug)]
pub struct Pki {
    /// The CA that signed everything below; clients trust it.
    pub ca_cert: PathBuf,
    /// etcd's serving certificate.
    pub etcd_server: CertFiles,
    /// The apiserver's client certificate towards etcd.
    pub etcd_client: CertFiles,
    /// The apiserver's serving certificate.
    pub apiserver_server: CertFiles,
    /// The admin identity (`system:masters`).
    pub admin: CertFiles,
    /// kube-controller-manager's identity.
    pub controller_manager: CertFiles,
    /// The real node's kubelet (`system:node:<name>` in `system:nodes`,
    /// for the Node authorizer).
    pub kubelet: CertFiles,
    /// The real node's kube-proxy (`system:kube-proxy`, bound to
    /// `system:node-proxier` by the bootstrap policy).
    pub kube_proxy: CertFiles,
    /// The apiserver's identity towards kubelets (logs, exec): in
    /// `system:masters`, so the kubelet's webhook authorization allows it.
    pub apiserver_kubelet_client: CertFiles,
    /// Service-account token signing key (private).
    pub service_account_key: PathBuf,
    /// Service-account token verification key (public).
    pub service_account_pub: PathBuf,
}

/// What a leaf certificate is for.
enum Usage {
    Server,
    Client,
}

impl Pki {
    /// Generates a complete set of credentials into `dir`.
    pub fn generate(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(Error::io("creating", dir))?;
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "pakket-dev-ca");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key)?;
        let ca_cert = dir.join("ca.crt");
        write(&ca_cert, &ca.pem())?;

        let loopback = ["127.0.0.1", "localhost"];
        let apiserver_names = [
            "127.0.0.1",
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            crate::SERVICE_IP,
            // Where it listens when a real node runs (Pods reach it there).
            crate::real_node::NODE_IP,
        ];
        let leaf = |name: &str, organization: Option<&str>, sans: &[&str], usage: Usage| {
            issue(&ca, dir, name, organization, sans, usage)
        };
        let service_account = KeyPair::generate()?;
        let service_account_key = dir.join("service-account.key");
        let service_account_pub = dir.join("service-account.pub");
        write(&service_account_key, &service_account.serialize_pem())?;
        write(&service_account_pub, &service_account.public_key_pem())?;

        Ok(Self {
            ca_cert,
            etcd_server: leaf("etcd-server", None, &loopback, Usage::Server)?,
            etcd_client: leaf("kube-apiserver-etcd-client", None, &[], Usage::Client)?,
            apiserver_server: leaf("kube-apiserver", None, &apiserver_names, Usage::Server)?,
            admin: leaf(
                crate::ADMIN_USER,
                Some("system:masters"),
                &[],
                Usage::Client,
            )?,
            controller_manager: leaf("system:kube-controller-manager", None, &[], Usage::Client)?,
            kubelet: leaf(
                &format!("system:node:{}", crate::real_node::NODE_NAME),
                Some("system:nodes"),
                &[],
                Usage::Client,
            )?,
            kube_proxy: leaf("system:kube-proxy", None, &[], Usage::Client)?,
            apiserver_kubelet_client: leaf(
                "kube-apiserver-kubelet-client",
                Some("system:masters"),
                &[],
                Usage::Client,
            )?,
            service_account_key,
            service_account_pub,
        })
    }
}

/// Issues one leaf certificate signed by the CA and writes it as `<file stem>.crt/.key`.
fn issue(
    ca: &CertifiedIssuer<'_, KeyPair>,
    dir: &Path,
    common_name: &str,
    organization: Option<&str>,
    sans: &[&str],
    usage: Usage,
) -> Result<CertFiles> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    if let Some(organization) = organization {
        params
            .distinguished_name
            .push(DnType::OrganizationName, organization);
    }
    params.subject_alt_names = sans
        .iter()
        .map(|name| match name.parse() {
            Ok(ip) => Ok(SanType::IpAddress(ip)),
            Err(_) => Ok(SanType::DnsName((*name).try_into()?)),
        })
        .collect::<Result<_, rcgen::Error>>()?;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![match usage {
        Usage::Server => ExtendedKeyUsagePurpose::ServerAuth,
        Usage::Client => ExtendedKeyUsagePurpose::ClientAuth,
    }];
    let cert = params.signed_by(&key, ca)?;
    let stem = common_name.replace(':', "-");
    let files = CertFiles {
        cert: dir.join(format!("{stem}.crt")),
        key: dir.join(format!("{stem}.key")),
    };
    write(&files.cert, &cert.pem())?;
    write(&files.key, &key.serialize_pem())?;
    Ok(files)
}

fn write(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).map_err(Error::io("writing", path))
}
