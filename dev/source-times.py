#!/usr/bin/env python3
"""Gives a checkout's files the modification times a shared cargo cache has seen.

Cargo calls a crate stale when one of its source files is newer than the
crate's last build. A fresh clone gives every file the time of the clone, so
CI, which tests a fresh clone against a warm cache outside it, compiled every
workspace crate again on every run (minutes, for nothing). Cargo has no
content-based freshness on stable Rust, hence this script.

    dev/source-times.py [--restore] RECORD

For every file of the checkout (tracked, or untracked and not ignored) the
record holds its content's git object id and the time it was given.

- A file whose content is not the one recorded is stamped with the current
  time, so cargo compiles it again even when the cache holds a newer build
  made from other content (another checkout sharing the cache: without this,
  a checkout's older times could pass another checkout's build as its own).
- A file whose content is the one recorded gets the recorded time if it is
  older than that. With --restore (a fresh clone, as CI runs: .ci/run) it
  gets the recorded time in any case, so the cache's builds stay fresh.
  Without it, times only move forward: another cargo target folder used
  with the same checkout could otherwise take an older build as current.

The record is then replaced with what the checkout now holds. Every build in
the cache was made from the recorded contents, as long as runs over one cache
are one at a time: dev/test.sh holds a lock on the cache for its whole run.
"""

import os
import subprocess
import sys
import time


def git(*args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ("git", *args), input=stdin, capture_output=True, check=True
    ).stdout


def checkout_contents() -> dict[str, str]:
    """Path -> git object id of its content as it is in the work tree now."""
    contents: dict[str, str] = {}
    for entry in git("ls-files", "--stage", "-z").split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, object_id, _stage = meta.split(b" ")
        # Links and submodules are not files cargo reads by time.
        if mode in (b"100644", b"100755"):
            contents[path.decode()] = object_id.decode()
    # Files that differ from the index, and new files, are hashed as they are.
    changed = [
        path.decode()
        for path in git(
            "ls-files", "-z", "--modified", "--others", "--exclude-standard"
        ).split(b"\0")
        if path
    ]
    present = [path for path in changed if os.path.isfile(path) and not os.path.islink(path)]
    for path in set(changed) - set(present):
        contents.pop(path, None)  # deleted from the work tree
    if present:
        ids = git("hash-object", "--stdin-paths", stdin="\n".join(present).encode())
        for path, object_id in zip(present, ids.decode().split()):
            contents[path] = object_id
    return contents


def read_record(record: str) -> dict[str, tuple[str, int]]:
    seen: dict[str, tuple[str, int]] = {}
    try:
        with open(record, encoding="utf-8") as lines:
            for line in lines:
                object_id, nanoseconds, path = line.rstrip("\n").split("\t", 2)
                seen[path] = (object_id, int(nanoseconds))
    except FileNotFoundError:
        pass
    return seen


def main() -> int:
    args = sys.argv[1:]
    restore = args[:1] == ["--restore"]
    if restore:
        args = args[1:]
    if len(args) != 1:
        print("usage: dev/source-times.py [--restore] RECORD", file=sys.stderr)
        return 2
    record = os.path.abspath(args[0])
    os.chdir(git("rev-parse", "--show-toplevel").decode().strip())

    seen = read_record(record)
    now = time.time_ns()
    kept = stamped = 0
    lines = []
    for path, object_id in sorted(checkout_contents().items()):
        recorded = seen.get(path)
        if recorded and recorded[0] == object_id:
            when = recorded[1]
            if not restore:
                when = max(when, os.stat(path).st_mtime_ns)
            kept += 1
        else:
            when = now
            stamped += 1
        os.utime(path, ns=(when, when))
        lines.append(f"{object_id}\t{when}\t{path}\n")

    os.makedirs(os.path.dirname(record), exist_ok=True)
    partial = f"{record}.{os.getpid()}"
    with open(partial, "w", encoding="utf-8") as out:
        out.writelines(lines)
    os.replace(partial, record)
    print(f"source times: {kept} files as the cache last saw them, {stamped} new or changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
