#!/usr/bin/env bash
# Keeps the shared cargo target folder from filling the disk: every change to
# a crate leaves the previous build of each test executable that depends on it
# (tens to hundreds of MB each) beside the new one, and nothing removes them.
# After a few days of commits that was 64 GB here, and a test then failed
# with "no space left on device".
#
#   dev/prune-target.sh CARGO_TARGET_DIR BUILT
#
# BUILT lists, by inode, the executables this run's builds produced or found
# fresh (dev/test.sh reads them from cargo's JSON messages). Every other
# executable in debug/deps goes.
# An earlier version kept the newest file of each name instead; a binary and
# its unit tests share a name, so it removed one of the two every run, and
# cargo linked it again the next. Libraries and build scripts stay.
set -euo pipefail
target=${1:?usage: dev/prune-target.sh CARGO_TARGET_DIR BUILT}
built=${2:?usage: dev/prune-target.sh CARGO_TARGET_DIR BUILT}
deps=$target/debug/deps
[[ -d $deps ]] || exit 0
[[ -s $built ]] || { echo "prune-target.sh: $built lists nothing; pruning nothing" >&2; exit 0; }
removed=0
while read -r name; do
  rm -f "$deps/$name" "$deps/$name.d"
  removed=$((removed + 1))
done < <(
  awk 'NR == FNR { keep[$1]; next } !($1 in keep) { print $2 }' \
    "$built" \
    <(find "$deps" -maxdepth 1 -type f -perm -u+x -regextype posix-extended \
        -regex '.*/[A-Za-z0-9_]+-[0-9a-f]{16}' -printf '%i %f\n')
)
echo "pruned $removed executables this run did not build from $deps"
