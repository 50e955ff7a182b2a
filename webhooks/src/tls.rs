//! The serving certificate: [`pakket_runtime::kernel::tls`] reads it from PEM files
//! (a mounted Secret, e.g. written by cert-manager) and swaps it in when the
//! files change, without a restart and without dropping connections; each
//! reload is counted in `pakket_webhook_certificate_reloads_total`.

pub use pakket_runtime::kernel::tls::{CertFiles, ReloadingCert, TlsError, provider};

/// What the server offers in ALPN: it speaks both, and the apiserver takes
/// HTTP/2 when offered.
pub const ALPN: &[&[u8]] = &[b"h2", b"http/1.1"];
