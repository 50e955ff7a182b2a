#!/usr/bin/env bash
# Keeps the shared cargo target folder from filling the disk: every change to
# a crate leaves the previous build of each test executable that depends on it
# (tens to hundreds of MB each) beside the new one, and nothing removes them.
# After a few days of commits that was 64 GB here, and a test then failed
# with "no space left on device". This keeps the newest build of each test
# executable and removes the older ones; libraries and build scripts are left
# alone (several builds of one crate can be current at once, with other
# features).
set -euo pipefail
deps=${1:?usage: dev/prune-target.sh CARGO_TARGET_DIR}/debug/deps
[[ -d $deps ]] || exit 0
removed=0
while read -r old; do
  rm -f "$deps/$old" "$deps/$old.d"
  removed=$((removed + 1))
done < <(
  find "$deps" -maxdepth 1 -type f -perm -u+x -regextype posix-extended \
    -regex '.*/[A-Za-z0-9_]+-[0-9a-f]{16}' -printf '%T@ %f\n' |
    sort -rn |
    # (mawk, Debian's awk, has no {16} in its regular expressions)
    awk '{ name = $2; sub(/-[0-9a-f]+$/, "", name); if (seen[name]++) print $2 }'
)
echo "pruned $removed older test executables from $deps"
