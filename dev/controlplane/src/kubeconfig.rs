//! Kubeconfig files and the static token file for the test users.

use std::path::Path;

use rand::distr::{Alphanumeric, SampleString};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::pki::{CertFiles, Pki};

/// A non-admin user known to the apiserver through its token file. Holds no
/// RBAC rights until a test grants some, so tests can check verbs as real users.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TestUser {
    /// The user name the apiserver sees.
    pub name: String,
    /// The bearer token.
    pub token: String,
    /// Groups besides `system:authenticated`.
    pub groups: Vec<String>,
}

/// The group every test user belongs to.
pub const TEST_USERS_GROUP: &str = "pakket:test-users";

/// Each test user's team, a group of her own besides [`TEST_USERS_GROUP`],
/// as the example policies in `deploy/policies/` name teams: two users
/// share `team-a` and two `team-b`, so a policy can tell a team from a
/// person; mallory belongs to no team.
pub const TEAMS: &[(&str, &str)] = &[
    ("alice", "team-a"),
    ("bob", "team-b"),
    ("carol", "team-c"),
    ("dave", "team-a"),
    ("erin", "team-b"),
];

/// The groups of test user `name`.
pub fn groups_of(name: &str) -> Vec<String> {
    let mut groups = vec![TEST_USERS_GROUP.to_owned()];
    groups.extend(
        TEAMS
            .iter()
            .filter(|(user, _)| *user == name)
            .map(|(_, team)| (*team).to_owned()),
    );
    groups
}

/// Makes the test users with fresh random tokens.
pub fn test_users() -> Vec<TestUser> {
    crate::TEST_USERS
        .iter()
        .map(|name| TestUser {
            name: (*name).to_owned(),
            token: Alphanumeric.sample_string(&mut rand::rng(), 40),
            groups: groups_of(name),
        })
        .collect()
}

/// Writes the apiserver's `--token-auth-file` (`token,user,uid,"groups"`).
pub fn write_token_file(path: &Path, users: &[TestUser]) -> Result<()> {
    let lines: String = users
        .iter()
        .map(|user| {
            format!(
                "{},{},{},\"{}\"\n",
                user.token,
                user.name,
                user.name,
                user.groups.join(",")
            )
        })
        .collect();
    std::fs::write(path, lines).map_err(Error::io("writing", path))
}

/// Writes the kubeconfig handed to admins and tests: context `admin` (the
/// default, `system:masters`) and one context per test user.
pub fn write_user_kubeconfig(
    path: &Path,
    server: &str,
    pki: &Pki,
    users: &[TestUser],
) -> Result<()> {
    let mut identities = vec![(crate::ADMIN_CONTEXT.to_owned(), client_cert(&pki.admin))];
    identities.extend(
        users
            .iter()
            .map(|user| (user.name.clone(), json!({ "token": user.token }))),
    );
    write(path, server, pki, crate::ADMIN_CONTEXT, identities)
}

/// Writes a kubeconfig with a single client-certificate identity (for a component).
pub fn write_component_kubeconfig(
    path: &Path,
    server: &str,
    pki: &Pki,
    identity: &CertFiles,
) -> Result<()> {
    write(
        path,
        server,
        pki,
        "default",
        vec![("default".to_owned(), client_cert(identity))],
    )
}

fn client_cert(files: &CertFiles) -> Value {
    json!({
        "client-certificate": files.cert,
        "client-key": files.key,
    })
}

fn write(
    path: &Path,
    server: &str,
    pki: &Pki,
    current: &str,
    identities: Vec<(String, Value)>,
) -> Result<()> {
    let users: Vec<Value> = identities
        .iter()
        .map(|(name, user)| json!({ "name": name, "user": user }))
        .collect();
    let contexts: Vec<Value> = identities
        .iter()
        .map(|(name, _)| json!({ "name": name, "context": { "cluster": crate::CLUSTER_NAME, "user": name } }))
        .collect();
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": crate::CLUSTER_NAME,
            "cluster": { "server": server, "certificate-authority": pki.ca_cert },
        }],
        "users": users,
        "contexts": contexts,
        "current-context": current,
    });
    let yaml = serde_saphyr::to_string(&config)
        .map_err(|error| Error::Config(format!("kubeconfig: {error}")))?;
    std::fs::write(path, yaml).map_err(Error::io("writing", path))
}
