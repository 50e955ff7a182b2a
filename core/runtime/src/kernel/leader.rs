//! Leader election on a `coordination.k8s.io/v1` Lease, so that of several
//! replicas of a provisioner exactly one reconciles at a time.
//!
//! Written by hand on kube + k8s-openapi: kube 5 has no leader election of its
//! own (kube-runtime has no Lease support), and the crates that do this
//! (`kube-leader-election`, `kube-lease-manager`) pin older kube releases, so
//! using one would mean a second kube in the build. The protocol is small and
//! follows client-go's `leaderelection`:
//!
//! - A candidate takes the Lease when no one holds it (no holder, or a holder
//!   released it) or when the holder has not renewed it for its
//!   `leaseDurationSeconds`. "Not renewed" is measured on the candidate's own
//!   clock, from when it last saw the Lease change, never by comparing
//!   `renewTime` with local time, so clock skew between nodes cannot make a
//!   live leader look expired.
//! - Every write is a `replace` carrying the `resourceVersion` that was read,
//!   so of two candidates racing for the same Lease one gets `409 Conflict`;
//!   two can never both hold it.
//! - The leader renews every `retry_period`; when it has not renewed for
//!   `renew_deadline` (shorter than the lease duration) it stops its work
//!   before any other candidate may take over.
//! - On graceful shutdown the leader stops its work, then clears the holder,
//!   so a standby takes over at its next poll instead of after the lease
//!   duration.

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};
use tokio::sync::watch;

/// Where the Lease lives, who this candidate is, and the timings.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This candidate's `holderIdentity`; unique per process.
    pub identity: String,
    /// How long a Lease not renewed stays with its holder (`leaseDurationSeconds`).
    pub lease_duration: Duration,
    /// How long the leader keeps working without a successful renewal.
    pub renew_deadline: Duration,
    /// How often the leader renews and a standby looks at the Lease.
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// A Lease in `namespace` named `name`, identity `hostname-pid`, and
    /// client-go's usual timings (15 s lease, 10 s renew deadline, 2 s retry).
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        LeaseConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity: default_identity(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// The same, with a Lease of `duration`, the renew deadline and retry
    /// period at client-go's ratios to it (15 s : 10 s : 2 s).
    pub fn with_lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self.renew_deadline = duration * 2 / 3;
        self.retry_period = (duration * 2 / 15).max(Duration::from_millis(200));
        self
    }

    /// The same, with another identity.
    pub fn with_identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// A Lease name for a provisioner id: `pakket.dev/plain` → `pakket.dev-plain`.
    pub fn name_for(provisioner_id: &str) -> String {
        let name: String = provisioner_id
            .to_ascii_lowercase()
            .chars()
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '.' | '-' => c,
                _ => '-',
            })
            .collect();
        name.trim_matches(['-', '.']).to_string()
    }

    fn check(&self) -> Result<(), Error> {
        if self.retry_period.is_zero()
            || self.renew_deadline <= self.retry_period
            || self.lease_duration <= self.renew_deadline
        {
            return Err(Error::Timings {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            });
        }
        if self.identity.is_empty() {
            return Err(Error::EmptyIdentity);
        }
        Ok(())
    }
}

/// `hostname-pid`: the pod name in a cluster (`HOSTNAME`), unique per process.
fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|host| host.trim().to_string())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    format!("{host}-{}", std::process::id())
}

/// Why leader election cannot run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The timings cannot keep two leaders apart.
    #[error(
        "lease timings must satisfy 0 < retry period ({retry_period:?}) < renew deadline \
         ({renew_deadline:?}) < lease duration ({lease_duration:?}); fix the LeaseConfig"
    )]
    Timings {
        /// The lease duration given.
        lease_duration: Duration,
        /// The renew deadline given.
        renew_deadline: Duration,
        /// The retry period given.
        retry_period: Duration,
    },
    /// No identity to write into `holderIdentity`.
    #[error("the lease identity is empty; give each candidate a unique identity")]
    EmptyIdentity,
}

/// What this candidate knows about its role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Not (or no longer) able to tell: before the first read of the Lease,
    /// while the apiserver cannot be reached, and after the election stopped.
    Unknown,
    /// Another candidate holds the Lease; this one is ready to take over.
    Standby,
    /// This candidate holds the Lease and runs the work.
    Leading,
}

/// A read-only view of a candidate's [`Role`], for probes and metrics.
#[derive(Clone, Debug)]
pub struct LeaderState(watch::Receiver<Role>);

impl LeaderState {
    /// The role now; [`Role::Unknown`] once the elector is gone.
    pub fn role(&self) -> Role {
        if self.0.has_changed().is_err() {
            return Role::Unknown;
        }
        *self.0.borrow()
    }

    /// Whether this candidate leads now.
    pub fn is_leader(&self) -> bool {
        self.role() == Role::Leading
    }

    /// Waits until the role satisfies `check` (or the elector is gone).
    pub async fn wait_for(&mut self, check: impl Fn(Role) -> bool) -> Role {
        if let Ok(role) = self.0.wait_for(|role| check(*role)).await {
            return *role;
        }
        self.role()
    }
}

/// One candidate for one Lease.
pub struct Elector {
    api: Api<Lease>,
    config: LeaseConfig,
    role: watch::Sender<Role>,
}

impl Elector {
    /// A candidate for the Lease `config` names; it does nothing until [`Elector::run`].
    pub fn new(client: Client, config: LeaseConfig) -> Self {
        Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            role: watch::Sender::new(Role::Unknown),
        }
    }

    /// A handle on this candidate's role.
    pub fn state(&self) -> LeaderState {
        LeaderState(self.role.subscribe())
    }

    /// The Lease settings.
    pub fn config(&self) -> &LeaseConfig {
        &self.config
    }

    /// Runs `work()` only while this candidate leads, until `shutdown` completes.
    ///
    /// When leadership is lost the work's future is dropped and the candidate
    /// stands by again; when it leads again it calls `work()` afresh. On
    /// `shutdown` the work is dropped first and the Lease released after, so
    /// the next leader never overlaps with this one; the result is `None`.
    /// When the work finishes on its own, the Lease is released and its output
    /// returned.
    pub async fn run<F, Fut, T>(
        &self,
        shutdown: impl Future<Output = ()>,
        mut work: F,
    ) -> Result<Option<T>, Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = T>,
    {
        self.config.check()?;
        tokio::pin!(shutdown);
        let mut candidate = Candidate::new(self);
        let result = loop {
            tokio::select! {
                () = &mut shutdown => break None,
                () = candidate.acquire() => {}
            }
            self.role.send_replace(Role::Leading);
            tracing::info!(lease = %self.config.name, identity = %self.config.identity, "leading");
            // Leaving this select drops the work before anything else happens.
            tokio::select! {
                () = &mut shutdown => {
                    candidate.release().await;
                    break None;
                }
                output = work() => {
                    candidate.release().await;
                    break Some(output);
                }
                reason = candidate.keep() => {
                    self.role.send_replace(Role::Standby);
                    tracing::warn!(lease = %self.config.name, %reason, "lost leadership; work stopped, standing by");
                }
            }
        };
        self.role.send_replace(Role::Unknown);
        Ok(result)
    }
}

/// Runs `work()` only while leading the Lease `config` names; see [`Elector::run`].
pub async fn run_as_leader<F, Fut, T>(
    client: Client,
    config: LeaseConfig,
    shutdown: impl Future<Output = ()>,
    work: F,
) -> Result<Option<T>, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = T>,
{
    Elector::new(client, config).run(shutdown, work).await
}

/// How often a problem with the Lease that does not change is logged again.
const SAY_AGAIN_AFTER: Duration = Duration::from_secs(30);

/// What is wrong with reading or taking the Lease, in words, with what to
/// do: a missing namespace and missing rights are the usual first-run
/// mistakes, and kube's own Display of an API error is a Debug dump.
fn lease_problem(error: &kube::Error, config: &LeaseConfig) -> String {
    let namespace = &config.namespace;
    match error {
        kube::Error::Api(status) if status.code == 404 && status.message.contains("namespaces") => {
            format!(
                "namespace {namespace} does not exist: create it (kubectl create namespace {namespace}) or pass --lease-namespace with one that does"
            )
        }
        kube::Error::Api(status) if status.code == 403 => format!(
            "{}: grant this identity get, create and update on leases (coordination.k8s.io) in namespace {namespace}, or pass --lease-namespace with one where it has them",
            crate::apply::api_message(error)
        ),
        other => crate::apply::api_message(other),
    }
}

/// The election's state between polls: what it last saw, and when.
struct Candidate<'a> {
    elector: &'a Elector,
    /// The Lease's resourceVersion when last read or written.
    seen_version: Option<String>,
    /// When (on this clock) the Lease was last seen to change.
    seen_at: Instant,
    /// The last problem with the Lease that was logged, and when.
    said: Option<(String, Instant)>,
}

impl<'a> Candidate<'a> {
    fn new(elector: &'a Elector) -> Self {
        Candidate {
            elector,
            seen_version: None,
            seen_at: Instant::now(),
            said: None,
        }
    }

    fn config(&self) -> &LeaseConfig {
        &self.elector.config
    }

    /// Returns once this candidate holds the Lease.
    async fn acquire(&mut self) {
        loop {
            let period = self.config().retry_period;
            match tokio::time::timeout(period, self.try_hold()).await {
                Ok(Ok(true)) => return,
                Ok(Ok(false)) => {
                    self.elector.role.send_replace(Role::Standby);
                }
                Ok(Err(error)) => {
                    self.elector.role.send_replace(Role::Unknown);
                    let problem = lease_problem(&error, self.config());
                    // Said when it changes and then every half minute, not
                    // at every retry.
                    if self.said.as_ref().is_none_or(|(said, at)| {
                        *said != problem || at.elapsed() >= SAY_AGAIN_AFTER
                    }) {
                        tracing::warn!(lease = %self.config().name, %problem, "cannot read or take the lease; retrying");
                        self.said = Some((problem, Instant::now()));
                    }
                }
                Err(_) => {
                    self.elector.role.send_replace(Role::Unknown);
                    tracing::warn!(lease = %self.config().name, "the apiserver did not answer within the retry period; retrying");
                }
            }
            tokio::time::sleep(period).await;
        }
    }

    /// Renews until leadership is lost; returns why.
    async fn keep(&mut self) -> String {
        let mut renewed = Instant::now();
        loop {
            tokio::time::sleep(self.config().retry_period).await;
            let left = self
                .config()
                .renew_deadline
                .saturating_sub(renewed.elapsed());
            match tokio::time::timeout(left, self.try_hold()).await {
                Ok(Ok(true)) => renewed = Instant::now(),
                Ok(Ok(false)) => return "another candidate holds the lease".to_string(),
                Ok(Err(error)) if renewed.elapsed() < self.config().renew_deadline => {
                    tracing::warn!(lease = %self.config().name, %error, "cannot renew the lease; retrying");
                }
                Ok(Err(error)) => return format!("not renewed within the renew deadline: {error}"),
                Err(_) => return "not renewed within the renew deadline".to_string(),
            }
        }
    }

    /// Takes or renews the Lease if it is free, expired or ours; `Ok(true)` when
    /// this candidate holds it afterwards.
    async fn try_hold(&mut self) -> Result<bool, kube::Error> {
        let config = self.config().clone();
        let now = MicroTime(jiff::Timestamp::now());
        let duration_seconds = i32::try_from(config.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let Some(mut lease) = self.elector.api.get_opt(&config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(config.name.clone()),
                    namespace: Some(config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(config.identity.clone()),
                    lease_duration_seconds: Some(duration_seconds),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self
                .elector
                .api
                .create(&PostParams::default(), &lease)
                .await
            {
                Ok(created) => {
                    self.saw(&created);
                    Ok(true)
                }
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(error) => Err(error),
            };
        };
        self.saw(&lease);
        let spec = lease.spec.take().unwrap_or_default();
        let holder = spec
            .holder_identity
            .clone()
            .filter(|holder| !holder.is_empty());
        let ours = holder.as_deref() == Some(config.identity.as_str());
        let held_for = spec
            .lease_duration_seconds
            .map(|seconds| Duration::from_secs(u64::try_from(seconds).unwrap_or(0)))
            .unwrap_or(config.lease_duration);
        if holder.is_some() && !ours && self.seen_at.elapsed() < held_for {
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0);
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(config.identity.clone()),
            lease_duration_seconds: Some(duration_seconds),
            acquire_time: if ours {
                spec.acquire_time
            } else {
                Some(now.clone())
            },
            renew_time: Some(now),
            lease_transitions: Some(if ours || holder.is_none() {
                transitions
            } else {
                transitions + 1
            }),
            ..spec
        });
        // `lease` still carries the resourceVersion read above: the write is
        // refused if anyone wrote in between.
        match self
            .elector
            .api
            .replace(&config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                self.saw(&written);
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(error),
        }
    }

    fn saw(&mut self, lease: &Lease) {
        let version = lease.resource_version();
        if version != self.seen_version {
            self.seen_version = version;
            self.seen_at = Instant::now();
        }
    }

    /// Clears the holder if it is still this candidate; best effort (a Lease
    /// left behind simply expires).
    async fn release(&mut self) {
        let config = self.config().clone();
        let release = async {
            let Some(mut lease) = self.elector.api.get_opt(&config.name).await? else {
                return Ok(());
            };
            let Some(spec) = lease.spec.as_mut() else {
                return Ok(());
            };
            if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
                return Ok(());
            }
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
            self.elector
                .api
                .replace(&config.name, &PostParams::default(), &lease)
                .await
                .map(drop)
        };
        match tokio::time::timeout(config.renew_deadline, release).await {
            Ok(Ok(())) => tracing::info!(lease = %config.name, "released the lease"),
            Ok(Err(error)) => {
                tracing::warn!(lease = %config.name, %error, "could not release the lease; it expires on its own")
            }
            Err(_) => {
                tracing::warn!(lease = %config.name, "releasing the lease timed out; it expires on its own")
            }
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_missing_lease_namespace_and_missing_rights_are_said_with_what_to_do() {
        let config = LeaseConfig::new("pakket-system", "lease");
        let api = |code: u16, message: &str| {
            kube::Error::Api(
                kube::core::Status::failure(
                    message,
                    if code == 404 { "NotFound" } else { "Forbidden" },
                )
                .with_code(code)
                .boxed(),
            )
        };
        let missing = lease_problem(&api(404, "namespaces \"pakket-system\" not found"), &config);
        assert_eq!(
            missing,
            "namespace pakket-system does not exist: create it (kubectl create namespace pakket-system) or pass --lease-namespace with one that does"
        );
        let forbidden = lease_problem(
            &api(403, "leases.coordination.k8s.io \"lease\" is forbidden"),
            &config,
        );
        assert!(
            forbidden
                .starts_with("leases.coordination.k8s.io \"lease\" is forbidden (HTTP 403): grant"),
            "{forbidden}"
        );
        assert!(
            !forbidden.contains("ErrorResponse") && !forbidden.contains("Status {"),
            "{forbidden}"
        );
    }
    use super::*;

    #[test]
    fn lease_names_come_from_provisioner_ids() {
        assert_eq!(
            LeaseConfig::name_for("pakket.dev/plain"),
            "pakket.dev-plain"
        );
        assert_eq!(
            LeaseConfig::name_for("Example.com/My_Prov/"),
            "example.com-my-prov"
        );
    }

    #[test]
    fn timings_that_could_overlap_leaders_are_refused() {
        let mut config = LeaseConfig::new("ns", "lease");
        assert!(config.check().is_ok());
        config.renew_deadline = config.lease_duration;
        assert!(matches!(config.check(), Err(Error::Timings { .. })));
    }

    #[test]
    fn the_default_identity_names_the_process() {
        let identity = LeaseConfig::new("ns", "lease").identity;
        assert!(
            identity.ends_with(&format!("-{}", std::process::id())),
            "{identity}"
        );
    }
}
