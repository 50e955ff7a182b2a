//! Leader election on a real Lease: two candidates, exactly one leads; when
//! the leader dies without releasing, the other takes over after the lease
//! duration; a graceful shutdown hands over at once; and they never lead at
//! the same time (checked whenever a candidate's work starts, and by sampling
//! both candidates' roles every 5 ms throughout).
//!
//! An idle leader renews by writing alone (no read of the Lease between
//! renewals), counted on its own client.
//!
//! Each test's Lease lives in its own Scope's namespace.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use pakket_runtime::kernel::leader::{Elector, LeaderState, LeaseConfig, Role};
use pakket_runtime::kernel::serve::Metrics;
use pakket_testkit::Scope;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Who is working now, and whether two ever worked at once.
#[derive(Clone, Default)]
struct Witness {
    running: Arc<AtomicUsize>,
    overlapped: Arc<AtomicBool>,
    worker: Arc<Mutex<Option<&'static str>>>,
}

/// Held by a candidate's work while it runs.
struct Working(Witness, &'static str);

impl Drop for Working {
    fn drop(&mut self) {
        let mut worker = self.0.worker.lock().unwrap();
        if *worker == Some(self.1) {
            *worker = None;
        }
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Witness {
    fn worker(&self) -> Option<&'static str> {
        *self.worker.lock().unwrap()
    }

    /// A candidate's work: records itself, then runs until dropped.
    fn work(
        &self,
        name: &'static str,
    ) -> impl FnMut() -> futures::future::BoxFuture<'static, ()> + use<> {
        let witness = self.clone();
        move || {
            let witness = witness.clone();
            Box::pin(async move {
                if witness.running.fetch_add(1, Ordering::SeqCst) != 0 {
                    witness.overlapped.store(true, Ordering::SeqCst);
                }
                *witness.worker.lock().unwrap() = Some(name);
                let _working = Working(witness, name);
                std::future::pending::<()>().await
            })
        }
    }

    /// Waits (up to `limit`) until `name` works; returns how long that took.
    async fn wait_for_worker(&self, name: &str, limit: Duration) -> Duration {
        let start = Instant::now();
        while self.worker() != Some(name) {
            assert!(
                start.elapsed() < limit,
                "{name} did not lead within {limit:?}; worker: {:?}",
                self.worker()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        start.elapsed()
    }
}

struct Candidate {
    state: LeaderState,
    task: JoinHandle<()>,
    stop: Option<oneshot::Sender<()>>,
}

/// The lease these tests use: 15 s (renew deadline 11.7 s, retry period
/// 2.8 s at the default's ratios), so a crash fails over in seconds, not
/// the default's 137 s.
const LEASE: Duration = Duration::from_secs(15);

fn candidate(scope: &Scope, name: &'static str, witness: &Witness) -> Candidate {
    let config = LeaseConfig::new(&scope.namespace, "leader")
        .with_lease_duration(LEASE)
        .with_identity(name);
    let elector = Elector::new(scope.client.clone(), config);
    let state = elector.state();
    let (stop, stopped) = oneshot::channel::<()>();
    let work = witness.work(name);
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        let output = elector.run(shutdown, work).await.unwrap();
        assert!(output.is_none(), "the work never finishes on its own");
    });
    Candidate {
        state,
        task,
        stop: Some(stop),
    }
}

/// Samples both candidates' roles every 5 ms for as long as the test runs,
/// flagging the witness if both ever say they lead.
fn watch_roles(witness: &Witness, a: &Candidate, b: &Candidate) {
    let (witness, a, b) = (witness.clone(), a.state.clone(), b.state.clone());
    tokio::spawn(async move {
        loop {
            if a.is_leader() && b.is_leader() {
                witness.overlapped.store(true, Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
}

/// Starts two candidates at once and returns them as (leader, standby).
async fn two_candidates(scope: &Scope, witness: &Witness) -> (Candidate, Candidate) {
    let a = candidate(scope, "a", witness);
    let b = candidate(scope, "b", witness);
    watch_roles(witness, &a, &b);
    let start = Instant::now();
    while witness.worker().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no one led within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (leader, mut standby) = if witness.worker() == Some("a") {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(
        standby.state.wait_for(|role| role != Role::Unknown).await,
        Role::Standby
    );
    assert!(leader.state.is_leader());
    (leader, standby)
}

async fn holder(scope: &Scope) -> Option<String> {
    let lease = Api::<Lease>::namespaced(scope.client.clone(), &scope.namespace)
        .get("leader")
        .await
        .unwrap();
    lease.spec.and_then(|spec| spec.holder_identity)
}

#[tokio::test]
async fn one_leads_and_the_other_takes_over_when_it_dies() {
    let scope = Scope::new("leader-dies").await;
    let witness = Witness::default();
    let (leader, standby) = two_candidates(&scope, &witness).await;
    let first = witness.worker().unwrap();
    assert_eq!(holder(&scope).await.as_deref(), Some(first));

    // Several renewals later, the same one still leads and the other waits.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(witness.worker(), Some(first));
    assert_eq!(standby.state.role(), Role::Standby);

    // Death: the leader's task is gone without releasing the Lease.
    leader.task.abort();
    let died = Instant::now();
    let second = if first == "a" { "b" } else { "a" };
    witness
        .wait_for_worker(second, Duration::from_secs(60))
        .await;
    println!(
        "failover after the leader died: {:.1} s",
        died.elapsed().as_secs_f64()
    );
    assert_eq!(holder(&scope).await.as_deref(), Some(second));
    assert!(standby.state.is_leader());
    assert!(
        !witness.overlapped.load(Ordering::SeqCst),
        "two candidates worked at once"
    );

    standby.task.abort();
    scope.cleanup().await;
}

#[tokio::test]
async fn a_graceful_shutdown_hands_over_at_once() {
    let scope = Scope::new("leader-handover").await;
    let witness = Witness::default();
    let (mut leader, standby) = two_candidates(&scope, &witness).await;
    let first = witness.worker().unwrap();
    let second = if first == "a" { "b" } else { "a" };

    leader.stop.take().unwrap().send(()).unwrap();
    let stopped = Instant::now();
    leader.task.await.unwrap();
    assert_eq!(
        leader.state.role(),
        Role::Unknown,
        "a stopped candidate is not ready"
    );
    // Released: no waiting for the 15 s lease; the standby's next poll
    // (one retry period, 2.8 s) takes it.
    let took = witness
        .wait_for_worker(second, Duration::from_secs(60))
        .await;
    let handover = stopped.elapsed();
    println!(
        "handover after a graceful shutdown: {:.1} s",
        handover.as_secs_f64()
    );
    assert!(
        handover < Duration::from_secs(8),
        "handover took {handover:?} ({took:?} after release)"
    );
    assert_eq!(holder(&scope).await.as_deref(), Some(second));
    assert!(
        !witness.overlapped.load(Ordering::SeqCst),
        "two candidates worked at once"
    );

    standby.task.abort();
    scope.cleanup().await;
}

#[tokio::test]
async fn a_live_leader_keeps_the_lease_past_its_duration() {
    let scope = Scope::new("leader-keeps").await;
    let witness = Witness::default();
    // "a" leads; "b" alone would lead at once, but must wait while "a" renews.
    let a = candidate(&scope, "a", &witness);
    witness.wait_for_worker("a", Duration::from_secs(30)).await;
    let mut b = candidate(&scope, "b", &witness);
    watch_roles(&witness, &a, &b);
    assert_eq!(
        b.state.wait_for(|role| role != Role::Unknown).await,
        Role::Standby
    );
    tokio::time::sleep(Duration::from_secs(20)).await; // longer than the lease duration
    assert_eq!(witness.worker(), Some("a"));
    assert_eq!(b.state.role(), Role::Standby);
    assert!(
        !witness.overlapped.load(Ordering::SeqCst),
        "two candidates worked at once"
    );
    a.task.abort();
    b.task.abort();
    scope.cleanup().await;
}

/// Requests sent so far through `metrics`' client: (reads, updates).
fn lease_requests(metrics: &Metrics) -> (u64, u64) {
    let requests = metrics.apiserver_requests();
    let count = |verb: &str| {
        requests
            .iter()
            .find(|(name, _)| *name == verb)
            .map_or(0, |(_, count)| *count)
    };
    (count("get"), count("update"))
}

/// An idle leader renews by writing alone: one `replace` of the Lease per
/// retry period, never a read between them. The leader's elector has a
/// client of its own, whose every request is counted by verb
/// (`Metrics::counted_client`); a standby polls the same Lease through
/// another client, as a second replica would.
///
/// How it fails: a renewal that reads the Lease before writing it (as
/// renewals did before) sends one read per update, so the reads counted
/// over five renewals are five, not zero; a leader that stopped renewing
/// never reaches five updates and the wait for them panics. The 10 s lease
/// keeps a slow apiserver from letting the standby take over in between
/// (which would rightly make the leader read the Lease again).
#[tokio::test]
async fn the_leader_renews_by_writing_alone() {
    let scope = Scope::new("leader-writes").await;
    let metrics = Arc::new(Metrics::new());
    let counted = metrics
        .counted_client(scope.cluster.config_as("admin").await)
        .unwrap();
    let config = |identity: &str| {
        LeaseConfig::new(&scope.namespace, "leader")
            .with_lease_duration(Duration::from_secs(10))
            .with_identity(identity)
    };
    let elector = Elector::new(counted, config("leader"));
    let mut leader = elector.state();
    let leading = tokio::spawn(async move {
        elector
            .run(std::future::pending::<()>(), std::future::pending::<()>)
            .await
    });
    tokio::time::timeout(
        Duration::from_secs(30),
        leader.wait_for(|role| role == Role::Leading),
    )
    .await
    .expect("leading within 30 s");
    let standby = Elector::new(scope.client.clone(), config("standby"));
    let mut standing_by = standby.state();
    let polling = tokio::spawn(async move {
        standby
            .run(std::future::pending::<()>(), std::future::pending::<()>)
            .await
    });
    assert_eq!(
        standing_by.wait_for(|role| role != Role::Unknown).await,
        Role::Standby
    );

    let (reads, updates) = lease_requests(&metrics);
    pakket_testkit::eventually("five renewals", || async {
        lease_requests(&metrics).1 >= updates + 5
    })
    .await;
    let (reads_after, updates_after) = lease_requests(&metrics);
    println!(
        "the leader renewed {} times with {} reads",
        updates_after - updates,
        reads_after - reads
    );
    assert_eq!(
        reads_after - reads,
        0,
        "the leader read the Lease between renewals"
    );
    assert!(leader.is_leader());
    assert_eq!(standing_by.role(), Role::Standby);
    leading.abort();
    polling.abort();
    scope.cleanup().await;
}
