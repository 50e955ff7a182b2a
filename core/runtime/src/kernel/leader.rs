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
//! - Every write is a `replace` carrying the `resourceVersion` that was last
//!   read or written, so of two candidates racing for the same Lease one gets
//!   `409 Conflict`; two can never both hold it.
//! - The leader renews every `retry_period` by writing alone: a `replace` of
//!   the Lease as it last wrote it, with a new `renewTime`. Only a conflict
//!   (someone else wrote it) makes it read the Lease again and decide as a
//!   candidate does; a Lease gone (404) is created again. Standbys keep
//!   reading it every `retry_period`: they must see the holder change. An
//!   idle leader costs the apiserver one write per retry period, not a
//!   read and a write.
//! - When the leader has not renewed for `renew_deadline` (shorter than the
//!   lease duration) it stops its work before any other candidate may take
//!   over.
//! - On graceful shutdown the leader stops its work, then clears the holder,
//!   so a standby takes over at its next poll (at most one retry period)
//!   instead of after the lease duration.
//!
//! The default timings are those of OLM v1's operator-controller and of
//! OpenShift's operators: a 137 s lease, a 107 s renew deadline, a 26 s
//! retry period. They ride out 60 s of apiserver downtime (an upgrade of a
//! single control-plane node) without a leader giving up its work, cost an
//! idle leader a write every 26 s, and hand over a graceful shutdown within
//! 26 s; only a leader that dies without releasing keeps the work waiting
//! for up to the lease duration. [`LeaseConfig::with_lease_duration`] keeps
//! these ratios for a shorter lease (the tests' 3 s fail over in seconds).

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
    /// OLM v1's timings ([`DEFAULT_LEASE_DURATION`] 137 s, renew deadline
    /// 107 s, retry period 26 s; see the module doc for why).
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        LeaseConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity: default_identity(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: Duration::ZERO,
            retry_period: Duration::ZERO,
        }
        .with_lease_duration(DEFAULT_LEASE_DURATION)
    }

    /// The same, with a Lease of `duration`, the renew deadline and retry
    /// period at OLM v1's ratios to it (137 s : 107 s : 26 s), the retry
    /// period never under [`MIN_RETRY_PERIOD`].
    pub fn with_lease_duration(mut self, duration: Duration) -> Self {
        let (renew_deadline, retry_period) = timings_for(duration);
        self.lease_duration = duration;
        self.renew_deadline = renew_deadline;
        self.retry_period = retry_period;
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

/// The lease duration of [`LeaseConfig::new`]: OLM v1's operator-controller
/// and OpenShift's operators use 137 s (with 107 s and 26 s), which rides
/// out a minute of apiserver downtime.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(137);
/// The shortest retry period [`LeaseConfig::with_lease_duration`] derives,
/// however short the lease: a leader renewing more often than this would
/// only load the apiserver.
pub const MIN_RETRY_PERIOD: Duration = Duration::from_millis(200);

/// The renew deadline and retry period for a lease of `duration`, at the
/// ratios of OLM v1's 137 s : 107 s : 26 s.
fn timings_for(duration: Duration) -> (Duration, Duration) {
    let renew_deadline = duration * 107 / 137;
    let retry_period = (duration * 26 / 137).max(MIN_RETRY_PERIOD);
    (renew_deadline, retry_period)
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

/// Whose the Lease is, as read, and what this candidate may do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim {
    /// Another candidate holds it and renewed it within its duration.
    HeldByAnother,
    /// This candidate holds it: renew it.
    Renew,
    /// It is free (no holder, or released): take it.
    TakeFree,
    /// Another candidate held it and let it expire: take it over (one
    /// more transition).
    TakeOver,
}

/// What `identity` may do with a Lease whose spec is `spec`, when it has
/// seen the Lease unchanged for `unchanged_for` (on its own clock; a
/// holder's own `leaseDurationSeconds` counts, else `default_duration`).
fn claim(
    spec: Option<&LeaseSpec>,
    identity: &str,
    unchanged_for: Duration,
    default_duration: Duration,
) -> Claim {
    let holder = spec
        .and_then(|spec| spec.holder_identity.as_deref())
        .filter(|holder| !holder.is_empty());
    let held_for = spec
        .and_then(|spec| spec.lease_duration_seconds)
        .map(|seconds| Duration::from_secs(u64::try_from(seconds).unwrap_or(0)))
        .unwrap_or(default_duration);
    match holder {
        None => Claim::TakeFree,
        Some(holder) if holder == identity => Claim::Renew,
        Some(_) if unchanged_for < held_for => Claim::HeldByAnother,
        Some(_) => Claim::TakeOver,
    }
}

/// What a leader does after its renewal (a `replace` of the Lease as it
/// last wrote it) failed with HTTP `code` (`None`: no answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AfterRenewal {
    /// Someone else wrote the Lease since: read it and decide again, as a
    /// candidate does (it may have been taken over, or only touched).
    ReadAgain,
    /// The Lease is gone: create it again (a conflict then means another
    /// candidate was quicker).
    CreateAgain,
    /// The apiserver failed: the renewal counts as not done, and is tried
    /// again at the next retry period until the renew deadline.
    Failed,
}

fn after_renewal(code: Option<u16>) -> AfterRenewal {
    match code {
        Some(409) => AfterRenewal::ReadAgain,
        Some(404) => AfterRenewal::CreateAgain,
        _ => AfterRenewal::Failed,
    }
}

/// The election's state between polls: what it last saw, and when.
struct Candidate<'a> {
    elector: &'a Elector,
    /// The Lease as last read or written, with its resourceVersion: what
    /// the leader's next renewal replaces without reading it again.
    lease: Option<Lease>,
    /// When (on this clock) the Lease was last seen to change.
    seen_at: Instant,
    /// The last problem with the Lease that was logged, and when.
    said: Option<(String, Instant)>,
}

impl<'a> Candidate<'a> {
    fn new(elector: &'a Elector) -> Self {
        Candidate {
            elector,
            lease: None,
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
            match tokio::time::timeout(left, self.renew()).await {
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

    /// The leader's renewal: one `replace` of the Lease as this candidate
    /// last wrote it, with a new `renewTime`; read again only when that
    /// conflicts (see [`after_renewal`]). `Ok(true)` while it still leads.
    async fn renew(&mut self) -> Result<bool, kube::Error> {
        let identity = self.config().identity.clone();
        let Some(mut lease) = self.lease.clone().filter(|lease| {
            lease
                .spec
                .as_ref()
                .and_then(|spec| spec.holder_identity.as_deref())
                == Some(identity.as_str())
        }) else {
            // Not known to be ours: decide from a fresh read.
            return self.try_hold().await;
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
        spec.lease_duration_seconds = Some(self.duration_seconds());
        let name = self.config().name.clone();
        match self
            .elector
            .api
            .replace(&name, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                self.saw(written);
                Ok(true)
            }
            Err(error) => match after_renewal(status_code(&error)) {
                AfterRenewal::ReadAgain => self.try_hold().await,
                AfterRenewal::CreateAgain => self.create().await,
                AfterRenewal::Failed => Err(error),
            },
        }
    }

    /// `leaseDurationSeconds` as this candidate writes it.
    fn duration_seconds(&self) -> i32 {
        i32::try_from(self.config().lease_duration.as_secs()).unwrap_or(i32::MAX)
    }

    /// Reads the Lease and takes or renews it if it is free, expired or
    /// ours (creating it if there is none); `Ok(true)` when this candidate
    /// holds it afterwards.
    async fn try_hold(&mut self) -> Result<bool, kube::Error> {
        let config = self.config().clone();
        let Some(mut lease) = self.elector.api.get_opt(&config.name).await? else {
            return self.create().await;
        };
        self.saw(lease.clone());
        let spec = lease.spec.take().unwrap_or_default();
        let claim = claim(
            Some(&spec),
            &config.identity,
            self.seen_at.elapsed(),
            config.lease_duration,
        );
        if claim == Claim::HeldByAnother {
            return Ok(false);
        }
        let now = MicroTime(jiff::Timestamp::now());
        let transitions = spec.lease_transitions.unwrap_or(0);
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(config.identity.clone()),
            lease_duration_seconds: Some(self.duration_seconds()),
            acquire_time: if claim == Claim::Renew {
                spec.acquire_time
            } else {
                Some(now.clone())
            },
            renew_time: Some(now),
            lease_transitions: Some(if claim == Claim::TakeOver {
                transitions + 1
            } else {
                transitions
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
                self.saw(written);
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Creates the Lease held by this candidate; `Ok(false)` when another
    /// one created it first.
    async fn create(&mut self) -> Result<bool, kube::Error> {
        let config = self.config().clone();
        let now = MicroTime(jiff::Timestamp::now());
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(config.name.clone()),
                namespace: Some(config.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(config.identity.clone()),
                lease_duration_seconds: Some(self.duration_seconds()),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        match self
            .elector
            .api
            .create(&PostParams::default(), &lease)
            .await
        {
            Ok(created) => {
                self.saw(created);
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Keeps `lease` as the last one seen; a new resourceVersion restarts
    /// the clock its holder's duration is measured on.
    fn saw(&mut self, lease: Lease) {
        let version = lease.resource_version();
        if version != self.lease.as_ref().and_then(ResourceExt::resource_version) {
            self.seen_at = Instant::now();
        }
        self.lease = Some(lease);
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

/// The HTTP status of an API error; `None` for a failure without one.
fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
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
    fn the_default_timings_are_olm_v1s_and_a_shorter_lease_keeps_their_ratios() {
        let secs = Duration::from_secs;
        let default = LeaseConfig::new("ns", "lease");
        assert_eq!(
            (
                default.lease_duration,
                default.renew_deadline,
                default.retry_period
            ),
            (secs(137), secs(107), secs(26))
        );
        // (lease, renew deadline, retry period): the tests' 3 s lease, the
        // old 15 s default, and one so short the retry period's floor holds.
        let rows = [
            (secs(137), secs(107), secs(26)),
            (secs(274), secs(214), secs(52)),
            (
                secs(3),
                Duration::from_nanos(2_343_065_693),
                Duration::from_nanos(569_343_065),
            ),
            (
                secs(15),
                Duration::from_nanos(11_715_328_467),
                Duration::from_nanos(2_846_715_328),
            ),
            (
                Duration::from_millis(1000),
                Duration::from_nanos(781_021_897),
                MIN_RETRY_PERIOD,
            ),
        ];
        for (lease, renew_deadline, retry_period) in rows {
            let config = LeaseConfig::new("ns", "lease").with_lease_duration(lease);
            assert_eq!(
                (config.renew_deadline, config.retry_period),
                (renew_deadline, retry_period),
                "lease {lease:?}"
            );
        }
        // Every lease the CLI accepts (2..=600 s) gives timings that keep
        // leaders apart.
        for seconds in 2..=600 {
            let config = LeaseConfig::new("ns", "lease").with_lease_duration(secs(seconds));
            assert!(config.check().is_ok(), "--lease-duration {seconds}");
        }
    }

    #[test]
    fn who_may_take_or_renew_the_lease() {
        let spec = |holder: Option<&str>, seconds: Option<i32>| LeaseSpec {
            holder_identity: holder.map(str::to_owned),
            lease_duration_seconds: seconds,
            ..LeaseSpec::default()
        };
        let secs = Duration::from_secs;
        let rows = [
            ("no Lease spec at all", None, secs(0), Claim::TakeFree),
            (
                "no holder",
                Some(spec(None, Some(15))),
                secs(0),
                Claim::TakeFree,
            ),
            (
                "released (empty holder)",
                Some(spec(Some(""), Some(1))),
                secs(0),
                Claim::TakeFree,
            ),
            (
                "ours, just renewed",
                Some(spec(Some("me"), Some(15))),
                secs(0),
                Claim::Renew,
            ),
            (
                "ours, long unchanged",
                Some(spec(Some("me"), Some(15))),
                secs(99),
                Claim::Renew,
            ),
            (
                "another's, renewed lately",
                Some(spec(Some("you"), Some(15))),
                secs(14),
                Claim::HeldByAnother,
            ),
            (
                "another's, unchanged for its duration",
                Some(spec(Some("you"), Some(15))),
                secs(15),
                Claim::TakeOver,
            ),
            (
                "another's duration, not ours, counts",
                Some(spec(Some("you"), Some(60))),
                secs(30),
                Claim::HeldByAnother,
            ),
            (
                "no duration written: ours counts",
                Some(spec(Some("you"), None)),
                secs(137),
                Claim::TakeOver,
            ),
        ];
        for (row, spec, unchanged_for, expected) in rows {
            assert_eq!(
                claim(spec.as_ref(), "me", unchanged_for, DEFAULT_LEASE_DURATION),
                expected,
                "{row}"
            );
        }
    }

    #[test]
    fn a_renewal_reads_the_lease_again_only_after_a_conflict() {
        let rows = [
            (Some(409), AfterRenewal::ReadAgain),
            (Some(404), AfterRenewal::CreateAgain),
            (Some(500), AfterRenewal::Failed),
            (Some(403), AfterRenewal::Failed),
            (Some(429), AfterRenewal::Failed),
            (None, AfterRenewal::Failed),
        ];
        for (code, expected) in rows {
            assert_eq!(after_renewal(code), expected, "HTTP {code:?}");
        }
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
