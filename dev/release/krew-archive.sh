#!/usr/bin/env bash
# Packs kubectl-instance for krew: one archive per platform, in the layout
# deploy/krew/instance.yaml expects (both binaries at the root, LICENSE too
# once the repository has one), and fills that platform's sha256 (and the
# version) into a copy of the manifest beside the archives. Run it once per
# platform; the copy accumulates.
#
#   dev/release/krew-archive.sh VERSION                    # this machine's platform, built here (release, --locked)
#   dev/release/krew-archive.sh VERSION OS ARCH BIN_DIR    # binaries built elsewhere (darwin, arm64)
#
# Output goes to $KREW_DIST (default dist/krew); it prints "SHA256  ARCHIVE".
# The archive is reproducible: sorted names, owner 0, mtime 0, gzip -n.
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() { echo "usage: $0 VERSION [OS ARCH BIN_DIR]" >&2; exit 2; }
[[ $# -eq 1 || $# -eq 4 ]] || usage
version=$1
[[ $version == v* ]] || { echo "$0: VERSION is krew's semantic version with its v, e.g. v0.1.0" >&2; exit 2; }
if [[ $# -eq 4 ]]; then
  os=$2 arch=$3 bin_dir=$4
else
  os=$(uname -s | tr '[:upper:]' '[:lower:]')
  case $(uname -m) in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "$0: unknown machine $(uname -m); name OS ARCH BIN_DIR" >&2; exit 2 ;;
  esac
  cargo build --release --locked -p pakket-kubectl-instance --bins >&2
  bin_dir=${CARGO_TARGET_DIR:-target}/release
fi
case $os/$arch in
  linux/amd64 | linux/arm64 | darwin/amd64 | darwin/arm64) ;;
  *) echo "$0: $os/$arch is not a platform of deploy/krew/instance.yaml" >&2; exit 2 ;;
esac

dist=${KREW_DIST:-dist/krew}
mkdir -p "$dist"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for bin in kubectl-instance kubectl_complete-instance; do
  [[ -x $bin_dir/$bin ]] || { echo "$0: $bin_dir/$bin is missing or not executable" >&2; exit 1; }
  install -m 0755 "$bin_dir/$bin" "$stage/$bin"
done
[[ -f LICENSE ]] && install -m 0644 LICENSE "$stage/LICENSE"

archive=$dist/kubectl-instance_${version}_${os}_${arch}.tar.gz
(cd "$stage" && tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - -- *) \
  | gzip -n > "$archive"
sum=$(sha256sum "$archive" | cut -d' ' -f1)

manifest=$dist/instance.yaml
[[ -f $manifest ]] || cp deploy/krew/instance.yaml "$manifest"
upper=$(echo "${os}_${arch}" | tr '[:lower:]' '[:upper:]')
sed -i -e "/^ *#/!s/VERSION/$version/g" -e "s/SHA256_$upper\$/$sum/" "$manifest"
echo "$sum  $archive"
