#!/usr/bin/env python3
"""Tests dev/source-times.py on throwaway git repositories.

Run by dev/test.sh before the script touches the checkout: a wrong time
there would make cargo take a stale build as current, and no other test
would notice.

    python3 dev/test-source-times.py
"""

import os
import subprocess
import sys
import tempfile
import time
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "source-times.py")
# An hour ago, in nanoseconds: far from "now" whatever the clock's grain.
HOUR = 3600 * 1_000_000_000


def run(*args: str, cwd: str) -> str:
    return subprocess.run(args, cwd=cwd, capture_output=True, check=True, text=True).stdout


def git(repo: str, *args: str) -> str:
    # No identity is assumed on the machine: the commit names its own.
    return run("git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", *args, cwd=repo)


def mtime(path: str) -> int:
    return os.stat(path).st_mtime_ns


class SourceTimes(unittest.TestCase):
    def setUp(self) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="pakket-source-times-")
        self.addCleanup(self.folder.cleanup)
        self.origin = os.path.join(self.folder.name, "origin")
        self.record = os.path.join(self.folder.name, "cache", "times.tsv")
        os.makedirs(self.origin)
        git(self.origin, "init", "-q")
        for name, text in {"a.rs": "fn a() {}\n", "b.rs": "fn b() {}\n"}.items():
            with open(os.path.join(self.origin, name), "w", encoding="utf-8") as out:
                out.write(text)
        git(self.origin, "add", ".")
        git(self.origin, "commit", "-q", "-m", "first")

    def stamp(self, repo: str, *flags: str) -> str:
        return run(sys.executable, SCRIPT, *flags, self.record, cwd=repo)

    def clone(self, name: str) -> str:
        path = os.path.join(self.folder.name, name)
        run("git", "clone", "-q", self.origin, path, cwd=self.folder.name)
        return path

    def test_a_fresh_clone_gets_back_the_times_of_unchanged_files_and_now_for_changed_ones(self) -> None:
        first = self.clone("first")
        before = time.time_ns()
        output = self.stamp(first)
        # Nothing recorded yet: every file is new to the cache, stamped now.
        self.assertIn("0 files as the cache last saw them, 2 new or changed", output)
        seen = mtime(os.path.join(first, "a.rs"))
        self.assertGreaterEqual(seen, before)

        # A later clone: git gives its files the time of the clone.
        time.sleep(0.01)
        second = self.clone("second")
        with open(os.path.join(second, "b.rs"), "a", encoding="utf-8") as out:
            out.write("fn changed() {}\n")
        self.assertGreater(mtime(os.path.join(second, "a.rs")), seen)
        before = time.time_ns()
        output = self.stamp(second, "--restore")
        self.assertEqual(mtime(os.path.join(second, "a.rs")), seen, "unchanged: the time the cache saw")
        self.assertGreaterEqual(mtime(os.path.join(second, "b.rs")), before, "changed: now")
        self.assertIn("1 files as the cache last saw them, 1 new or changed", output)

    def test_without_restore_times_only_move_forward(self) -> None:
        checkout = self.clone("checkout")
        a = os.path.join(checkout, "a.rs")
        self.stamp(checkout)
        recorded = mtime(a)
        # An older time with the same content moves up to the recorded one.
        os.utime(a, ns=(recorded - HOUR, recorded - HOUR))
        self.stamp(checkout)
        self.assertEqual(mtime(a), recorded)
        # A newer one stays: the record's older time must not take it back.
        newer = recorded + HOUR
        os.utime(a, ns=(newer, newer))
        self.stamp(checkout)
        self.assertEqual(mtime(a), newer)
        # With --restore the recorded time wins (the record now holds newer).
        os.utime(a, ns=(newer + HOUR, newer + HOUR))
        self.stamp(checkout, "--restore")
        self.assertEqual(mtime(a), newer)

    def test_a_content_the_record_has_not_seen_is_stamped_now_even_if_its_time_is_older(self) -> None:
        checkout = self.clone("checkout")
        self.stamp(checkout)
        b = os.path.join(checkout, "b.rs")
        with open(b, "w", encoding="utf-8") as out:
            out.write("fn other() {}\n")
        # Another checkout's build may be newer than this old time.
        old = time.time_ns() - HOUR
        os.utime(b, ns=(old, old))
        before = time.time_ns()
        self.stamp(checkout)
        self.assertGreaterEqual(mtime(b), before)

    def test_untracked_files_are_recorded_and_deleted_ones_leave_the_record(self) -> None:
        checkout = self.clone("checkout")
        with open(os.path.join(checkout, "new.rs"), "w", encoding="utf-8") as out:
            out.write("fn new() {}\n")
        os.remove(os.path.join(checkout, "a.rs"))
        self.stamp(checkout)
        with open(self.record, encoding="utf-8") as lines:
            paths = sorted(line.rstrip("\n").split("\t", 2)[2] for line in lines)
        self.assertEqual(paths, ["b.rs", "new.rs"])

    def test_a_wrong_call_says_how_to_call_it(self) -> None:
        result = subprocess.run(
            (sys.executable, SCRIPT), cwd=self.origin, capture_output=True, text=True
        )
        self.assertEqual(result.returncode, 2)
        self.assertIn("usage: dev/source-times.py [--restore] RECORD", result.stderr)


if __name__ == "__main__":
    unittest.main()
