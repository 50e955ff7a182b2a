//! Serving certificates for webhooks, without state and without
//! cert-manager.
//!
//! `objects()` is a pure function of (content, config, cluster facts,
//! key, now), and every reconcile applies what it returns: a certificate
//! generated at random would rewrite the Secret (and restart nothing, but
//! break the caBundle) at every render. So every key and serial number is
//! derived, with HMAC-SHA256 under the provisioner's [`CertificateKey`],
//! from the Instance's UID, the Deployment and the validity period, and
//! the keys are Ed25519, whose signatures are deterministic: the same
//! inputs give byte-identical certificates.
//!
//! | certificate | key seed | validity |
//! |---|---|---|
//! | the Instance's CA | `ca ‖ uid` | 10 years from the Instance's creation |
//! | a Deployment's serving certificate, period k | `serving ‖ uid ‖ deployment ‖ k` | `start + k·P` to `start + (k+2)·P`, P = 90 days |
//!
//! The CA never changes (the caBundle in webhook configurations and CRDs
//! stays put); the serving certificate of period k is replaced when period
//! k+1 starts, a whole period before it expires, so pods that read the
//! mounted Secret late still hold a valid one.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pakket_api::Instance;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ED25519, SanType, SerialNumber,
};
use ring::hmac;

/// The fewest bytes a [`CertificateKey`] may have.
pub const MIN_KEY_BYTES: usize = 32;
/// How long a serving certificate's period lasts; each is valid for two.
pub const PERIOD: Duration = Duration::from_secs(90 * 24 * 60 * 60);
/// The shortest period an admin may choose: a mounted Secret reaches a
/// Pod a minute or so after it changes, and each certificate must still
/// be valid by then.
pub const MIN_PERIOD: Duration = Duration::from_secs(60);
/// How long the Instance's CA is valid, from the Instance's creation.
pub const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);

/// Domain-separating labels: no two derivations share an input.
const CA_SEED: &str = "pakket.dev/registry-v1 webhook ca key";
const CA_SERIAL: &str = "pakket.dev/registry-v1 webhook ca serial";
const SERVING_SEED: &str = "pakket.dev/registry-v1 webhook serving key";
const SERVING_SERIAL: &str = "pakket.dev/registry-v1 webhook serving serial";

/// The provisioner's secret from which every webhook certificate is
/// derived. Replicas and restarts must share it, or each would issue
/// other certificates.
#[derive(Clone)]
pub struct CertificateKey(hmac::Key);

impl std::fmt::Debug for CertificateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CertificateKey(..)")
    }
}

impl CertificateKey {
    /// A key from its bytes; at least [`MIN_KEY_BYTES`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err(format!(
                "a certificate key needs at least {MIN_KEY_BYTES} bytes, this one has {}",
                bytes.len()
            ));
        }
        Ok(Self(hmac::Key::new(hmac::HMAC_SHA256, bytes)))
    }

    /// The key in a file (surrounding whitespace ignored, as for record
    /// keys, so a Secret made with `--from-literal` or `--from-file` works).
    pub fn read(path: &Path) -> Result<Self, String> {
        let bytes = std::fs::read(path)
            .map_err(|error| format!("{}: cannot be read ({error})", path.display()))?;
        Self::from_bytes(bytes.trim_ascii())
            .map_err(|problem| format!("{}: {problem}", path.display()))
    }

    /// A fresh random key: certificates change whenever it does.
    pub fn random() -> Self {
        use ring::rand::SecureRandom as _;
        let mut bytes = [0u8; MIN_KEY_BYTES];
        ring::rand::SystemRandom::new()
            .fill(&mut bytes)
            .expect("the system random source works");
        Self(hmac::Key::new(hmac::HMAC_SHA256, &bytes))
    }

    /// HMAC-SHA256 over `parts`, each length-prefixed so that no two lists
    /// of parts give the same input.
    fn derive(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut context = hmac::Context::with_key(&self.0);
        for part in parts {
            context.update(&(part.len() as u64).to_be_bytes());
            context.update(part);
        }
        let mut out = [0u8; 32];
        out.copy_from_slice(context.sign().as_ref());
        out
    }
}

/// What an Instance's certificates are issued from: the provisioner's key,
/// the Instance's identity and creation time, and the time now.
#[derive(Clone, Debug)]
pub struct Issuance<'a> {
    key: &'a CertificateKey,
    uid: String,
    /// Seconds since the epoch.
    created: u64,
    /// Seconds since the epoch.
    now: u64,
    /// How long each serving certificate's period lasts, in seconds.
    period: u64,
}

impl<'a> Issuance<'a> {
    /// Certificates for `instance` at `now`. An Instance read from a
    /// cluster has a UID and a creation time; one built in memory (the CLI,
    /// tests) may not, and then its name and `now` stand in.
    pub fn new(key: &'a CertificateKey, instance: &Instance, now: SystemTime) -> Self {
        let now = seconds(now);
        let uid = instance
            .metadata
            .uid
            .clone()
            .or_else(|| instance.metadata.name.clone())
            .unwrap_or_default();
        let created = instance
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(now, |time| u64::try_from(time.0.as_second()).unwrap_or(0));
        Self::at(key, uid, created, now)
    }

    /// Certificates for the Instance `uid` created at `created`, at `now`
    /// (all seconds since the epoch).
    pub fn at(key: &'a CertificateKey, uid: impl Into<String>, created: u64, now: u64) -> Self {
        Self {
            key,
            uid: uid.into(),
            created,
            now,
            period: PERIOD.as_secs(),
        }
    }

    /// The same, with serving certificates that rotate every `period`
    /// (at least a minute; [`PERIOD`] unless an admin shortens it).
    pub fn with_period(mut self, period: Duration) -> Self {
        self.period = period.as_secs().max(MIN_PERIOD.as_secs());
        self
    }

    /// When the next period starts: the serving certificate rendered from
    /// then on is the next one.
    pub fn next_rotation(&self) -> SystemTime {
        let period = self.now.saturating_sub(self.created) / self.period;
        UNIX_EPOCH + Duration::from_secs(self.created + (period + 1) * self.period)
    }

    /// The Instance's CA.
    pub fn authority(&self) -> Result<Authority<'a>, String> {
        let uid = self.uid.as_bytes();
        let key = ed25519(&self.key.derive(&[CA_SEED.as_bytes(), uid]))?;
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(
            DnType::CommonName,
            format!("pakket webhook CA {}", self.uid),
        );
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.serial_number = Some(serial(&self.key.derive(&[CA_SERIAL.as_bytes(), uid])));
        validity(
            &mut params,
            self.created,
            self.created + CA_VALIDITY.as_secs(),
        );
        let certificate = params
            .self_signed(&key)
            .map_err(|error| error.to_string())?;
        Ok(Authority {
            pem: certificate.pem(),
            issuer: Issuer::new(params, key),
            issuance: self.clone(),
        })
    }
}

/// An Instance's CA: its certificate (the caBundle) and what it signs with.
pub struct Authority<'a> {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
    issuance: Issuance<'a>,
}

impl std::fmt::Debug for Authority<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("uid", &self.issuance.uid)
            .finish_non_exhaustive()
    }
}

/// A serving certificate and its key, PEM-encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Serving {
    /// The certificate (`tls.crt`).
    pub certificate: String,
    /// Its PKCS#8 private key (`tls.key`).
    pub key: String,
}

impl Authority<'_> {
    /// The CA certificate, PEM-encoded: what clients trust.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// The serving certificate of the current period for `service` in
    /// `namespace`, served by `deployment`.
    pub fn serving(
        &self,
        deployment: &str,
        service: &str,
        namespace: &str,
    ) -> Result<Serving, String> {
        let issuance = &self.issuance;
        let period = issuance.now.saturating_sub(issuance.created) / issuance.period;
        let parts = |label: &'static str| -> [Vec<u8>; 4] {
            [
                label.as_bytes().to_vec(),
                issuance.uid.as_bytes().to_vec(),
                deployment.as_bytes().to_vec(),
                period.to_be_bytes().to_vec(),
            ]
        };
        let derive = |label| {
            let parts = parts(label);
            let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            issuance.key.derive(&parts)
        };
        let key = ed25519(&derive(SERVING_SEED))?;
        let names = [
            format!("{service}.{namespace}"),
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
        ];
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, names[0].clone());
        params.subject_alt_names = names
            .iter()
            .map(|name| {
                name.clone()
                    .try_into()
                    .map(SanType::DnsName)
                    .map_err(|error| format!("{name}: {error}"))
            })
            .collect::<Result<_, _>>()?;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(serial(&derive(SERVING_SERIAL)));
        let start = issuance.created + period * issuance.period;
        validity(&mut params, start, start + 2 * issuance.period);
        let certificate = params
            .signed_by(&key, &self.issuer)
            .map_err(|error| error.to_string())?;
        Ok(Serving {
            certificate: certificate.pem(),
            key: key.serialize_pem(),
        })
    }
}

/// The Ed25519 key pair whose seed is `seed`: its PKCS#8 v1 document (the
/// seed alone; ring computes the public key) loaded by rcgen.
fn ed25519(seed: &[u8; 32]) -> Result<KeyPair, String> {
    // PrivateKeyInfo { version 0, AlgorithmIdentifier { id-Ed25519 },
    // OCTET STRING { CurvePrivateKey OCTET STRING (32 bytes) } } (RFC 8410).
    const PREFIX: [u8; 16] = [
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    let mut der = PREFIX.to_vec();
    der.extend_from_slice(seed);
    KeyPair::from_pkcs8_der_and_sign_algo(&der.as_slice().into(), &PKCS_ED25519)
        .map_err(|error| format!("cannot load a derived Ed25519 key: {error}"))
}

/// A positive, non-zero 16-byte serial number from `bytes`.
fn serial(bytes: &[u8; 32]) -> SerialNumber {
    let mut serial = [0u8; 16];
    serial.copy_from_slice(&bytes[..16]);
    // RFC 5280: positive (top bit clear) and not zero.
    serial[0] = (serial[0] & 0x7f) | 0x01;
    SerialNumber::from_slice(&serial)
}

/// Valid from `from` to `to` (seconds since the epoch). rcgen's time type
/// is reached through its own date function, so this crate needs no
/// `time` dependency of its own.
fn validity(params: &mut CertificateParams, from: u64, to: u64) {
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    params.not_before = epoch + Duration::from_secs(from);
    params.not_after = epoch + Duration::from_secs(to);
}

fn seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |duration| duration.as_secs())
}

#[cfg(test)]
mod tests {
    use rustls_pki_types::pem::PemObject as _;
    use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

    use super::*;

    const CREATED: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z
    const DAY: u64 = 24 * 60 * 60;

    fn key() -> CertificateKey {
        CertificateKey::from_bytes(&[7; 32]).unwrap()
    }

    fn issue(key: &CertificateKey, now: u64) -> (String, Serving) {
        let authority = Issuance::at(key, "uid-1", CREATED, now)
            .authority()
            .unwrap();
        let serving = authority
            .serving("op-controller", "op-controller-service", "operators")
            .unwrap();
        (authority.pem().to_owned(), serving)
    }

    /// Whether `serving` chains to `ca` for `name` at `at`, as a TLS
    /// client checks it.
    fn verifies(ca: &str, serving: &Serving, name: &str, at: u64) -> Result<(), webpki::Error> {
        let ca = CertificateDer::from_pem_slice(ca.as_bytes()).unwrap();
        let leaf = CertificateDer::from_pem_slice(serving.certificate.as_bytes()).unwrap();
        let anchor = webpki::anchor_from_trusted_cert(&ca)?;
        let leaf = webpki::EndEntityCert::try_from(&leaf)?;
        leaf.verify_for_usage(
            &[webpki::ring::ED25519],
            &[anchor],
            &[],
            UnixTime::since_unix_epoch(Duration::from_secs(at)),
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )?;
        leaf.verify_is_valid_for_subject_name(&ServerName::try_from(name).unwrap())
    }

    #[test]
    fn the_same_inputs_give_byte_identical_certificates() {
        let now = CREATED + 3 * DAY;
        assert_eq!(issue(&key(), now), issue(&key(), now));
        let other = CertificateKey::from_bytes(&[8; 32]).unwrap();
        assert_ne!(issue(&key(), now).0, issue(&other, now).0);
    }

    #[test]
    fn the_serving_certificate_rotates_each_period_and_the_ca_stays() {
        let period = PERIOD.as_secs();
        let (ca_early, early) = issue(&key(), CREATED + 1);
        let (ca_same, same) = issue(&key(), CREATED + period - 1);
        let (ca_next, next) = issue(&key(), CREATED + period);
        assert_eq!(early, same, "one period, one certificate");
        assert_ne!(early, next, "a new period, a new certificate and key");
        assert_ne!(early.key, next.key);
        assert_eq!(ca_early, ca_same);
        assert_eq!(ca_early, ca_next, "the caBundle never changes");
        // Period 0's certificate is still valid while period 1's is served:
        // pods that read the Secret late keep working.
        verifies(
            &ca_next,
            &early,
            "op-controller-service.operators.svc",
            CREATED + period + DAY,
        )
        .unwrap();
        assert!(
            verifies(
                &ca_next,
                &early,
                "op-controller-service.operators.svc",
                CREATED + 2 * period + 1
            )
            .is_err(),
            "expired after two periods"
        );
    }

    #[test]
    fn a_shorter_period_rotates_sooner_and_says_when_the_next_one_starts() {
        let minutes = |n: u64| Duration::from_secs(n * 60);
        let at = |now: u64| Issuance::at(&KEY_FOR_PERIODS, "uid-1", CREATED, now);
        let serving = |now: u64| {
            let issuance = at(now).with_period(minutes(2));
            let authority = issuance.authority().unwrap();
            let serving = authority.serving("op", "op-service", "operators").unwrap();
            (
                authority.pem().to_owned(),
                serving,
                issuance.next_rotation(),
            )
        };
        let (ca, first, next) = serving(CREATED + 30);
        assert_eq!(next, UNIX_EPOCH + Duration::from_secs(CREATED + 120));
        let (ca_after, second, next_after) = serving(CREATED + 120);
        assert_ne!(first, second, "rotated after two minutes");
        assert_eq!(ca, ca_after, "the caBundle stays");
        assert_eq!(next_after, UNIX_EPOCH + Duration::from_secs(CREATED + 240));
        verifies(&ca, &first, "op-service.operators.svc", CREATED + 200).unwrap();
        assert!(verifies(&ca, &first, "op-service.operators.svc", CREATED + 241).is_err());
        // Below a minute a mounted Secret could reach the Pod expired.
        let floor = at(CREATED).with_period(Duration::from_secs(5));
        assert_eq!(
            floor.next_rotation(),
            UNIX_EPOCH + Duration::from_secs(CREATED + MIN_PERIOD.as_secs())
        );
    }

    static KEY_FOR_PERIODS: std::sync::LazyLock<CertificateKey> =
        std::sync::LazyLock::new(|| CertificateKey::from_bytes(&[7; 32]).unwrap());

    #[test]
    fn the_serving_certificate_verifies_against_the_ca_for_the_service_names() {
        let now = CREATED + 200 * DAY;
        let (ca, serving) = issue(&key(), now);
        for name in [
            "op-controller-service.operators",
            "op-controller-service.operators.svc",
            "op-controller-service.operators.svc.cluster.local",
        ] {
            verifies(&ca, &serving, name, now).unwrap();
        }
        assert!(verifies(&ca, &serving, "other-service.operators.svc", now).is_err());
        let (other_ca, _) = issue(&CertificateKey::from_bytes(&[9; 32]).unwrap(), now);
        assert!(
            verifies(
                &other_ca,
                &serving,
                "op-controller-service.operators.svc",
                now
            )
            .is_err()
        );
        assert!(serving.key.starts_with("-----BEGIN PRIVATE KEY-----"));
    }

    #[test]
    fn keys_are_at_least_32_bytes_and_replicas_reading_one_key_agree() {
        assert!(CertificateKey::from_bytes(&[1; 31]).is_err());
        let dir = std::env::temp_dir().join(format!("pakket-cert-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("certificate-key");
        std::fs::write(&path, format!("{}\n", "k".repeat(64))).unwrap();
        let now = CREATED + DAY;
        assert_eq!(
            issue(&CertificateKey::read(&path).unwrap(), now),
            issue(&CertificateKey::read(&path).unwrap(), now),
            "replicas reading the same key agree"
        );
        std::fs::write(&path, "k".repeat(31)).unwrap();
        assert!(
            CertificateKey::read(&path).is_err(),
            "a short key is refused"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
