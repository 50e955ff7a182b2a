//! Free loopback ports, chosen by the kernel so two control planes on one
//! machine never ask for the same port.

use std::net::TcpListener;

/// Ports for one control plane.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct Ports {
    /// etcd client port (TLS).
    pub etcd_client: u16,
    /// etcd peer port (single member: nothing connects, but etcd must listen).
    pub etcd_peer: u16,
    /// kube-apiserver secure port.
    pub apiserver: u16,
    /// kube-scheduler secure port (health and metrics), used only with fake
    /// nodes; 0 in state files written before the scheduler existed.
    #[serde(default)]
    pub scheduler: u16,
}

impl Ports {
    /// Asks the kernel for four distinct free ports. They are released before
    /// the components bind them, so a start-up that loses the race retries
    /// with new ports (see `ControlPlane::start`).
    pub fn pick() -> std::io::Result<Self> {
        let listeners = (0..4)
            .map(|_| TcpListener::bind(("127.0.0.1", 0)))
            .collect::<std::io::Result<Vec<_>>>()?;
        let port = |index: usize| listeners[index].local_addr().map(|address| address.port());
        Ok(Self {
            etcd_client: port(0)?,
            etcd_peer: port(1)?,
            apiserver: port(2)?,
            scheduler: port(3)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_four_distinct_ports() {
        let ports = Ports::pick().unwrap();
        let mut all = [
            ports.etcd_client,
            ports.etcd_peer,
            ports.apiserver,
            ports.scheduler,
        ];
        all.sort_unstable();
        assert!(all[0] > 0 && all.windows(2).all(|pair| pair[0] != pair[1]));
    }
}
