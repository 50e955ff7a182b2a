# Sourced by the scripts that call cargo and may themselves run under
# `cargo test` (the in-cluster test runs dev/in-cluster.sh, which runs
# dev/images/build.sh). cargo gives a test process its crate's variables
# (CARGO_MANIFEST_DIR, CARGO_PKG_NAME, …); a nested cargo would pass them on
# to build scripts that track them. ring's does (CARGO_MANIFEST_DIR), so
# ring, rustls, kube and every Pakket crate compiled again under the test, and
# once more in the next run outside it: minutes of every full run. Without
# them a nested build is the outer one, already done.
while read -r name; do
  unset "$name"
done < <(compgen -e | grep -E '^CARGO_(MANIFEST_|PKG_|CRATE_NAME$|BIN_|PRIMARY_PACKAGE$|TARGET_TMPDIR$|RUSTC_CURRENT_DIR$)')
