//! `kubectl_complete-instance`: what kubectl (>= 1.26) runs from PATH to
//! complete `kubectl instance <TAB>`. It runs the `kubectl-instance` beside
//! it (else the one on PATH) as `kubectl-instance __complete WORDS...`,
//! which answers in Cobra's format. Kept apart and tiny so it builds in a
//! moment and needs nothing but the plugin.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("kubectl-instance")))
        .filter(|plugin| plugin.is_file());
    let plugin = beside.unwrap_or_else(|| PathBuf::from("kubectl-instance"));
    match Command::new(plugin)
        .arg("__complete")
        .args(std::env::args_os().skip(1))
        .status()
    {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        // Offer nothing, not even file names: the plugin is missing or failed.
        _ => {
            println!(":4");
            ExitCode::SUCCESS
        }
    }
}
