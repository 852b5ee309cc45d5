"""Custom allocators (docs/custom-allocators.md): the oscar.h API (arenas and views), its
pass-through shim, the oscar-wrap generator, and region allocators on plain malloc."""

import os
import re
import shutil
import signal
import subprocess

import pytest

from conftest import (BUILD, HEX, LIB, REPO, assert_clean_run, assert_report, assert_same_output,
                      hexaddr, location_line, parse_values)

UAF = r"oscar: heap-use-after-free on address %s \((READ|WRITE)\)"


def uaf_line(addr, access="READ"):
    return re.escape("oscar: heap-use-after-free on address %s (%s)" % (hexaddr(addr), access))


# --- the API on a slab allocator (tests/programs/custom_pool.c) -----------------------------

def test_correct_program_same_output_with_and_without_oscar(runner):
    g = runner.glibc("custom_pool", "correct")
    o = runner.oscar("custom_pool", "correct")
    assert_same_output(o, g)
    assert "oscar_active 1" in o.stderr and "oscar_active 0" in g.stderr


def test_uaf_through_revoked_view_is_reported(runner):
    res = runner.oscar("custom_pool", "uaf")
    v = parse_values(res.stdout)
    report = assert_report(res, signal.SIGSEGV, uaf_line(v["item"] + 8),
                           location_line(v["item"] + 8, v["item"], 96))
    text = "\n".join(report)
    assert "custom-allocator view of %s" % hexaddr(v["origin"]) in text
    # The create and revoke stacks name the allocator's functions.
    assert re.search(r"freed by thread \d+ here:\n(    #\d+ .*\n)*?    #\d+ .* in pool_put ", text + "\n")
    assert re.search(r"previously allocated by thread \d+ here:\n(    #\d+ .*\n)*?    #\d+ .* in pool_get ",
                     text + "\n")


def test_dangling_write_after_slot_reuse_is_caught(runner):
    res = runner.oscar("custom_pool", "uaf_write")
    v = parse_values(res.stdout)
    assert_report(res, signal.SIGSEGV, uaf_line(v["item"], "WRITE"))


def test_uaf_of_freed_arena_is_reported(runner):
    res = runner.oscar("custom_pool", "arena_uaf")
    v = parse_values(res.stdout)
    assert_report(res, signal.SIGSEGV, uaf_line(v["arena"] + 5000),
                  location_line(v["arena"] + 5000, v["arena"], 10000))


def test_free_of_a_view_is_reported(runner):
    res = runner.oscar("custom_pool", "free_view")
    v = parse_values(res.stdout)
    assert_report(res, signal.SIGABRT,
                  re.escape("oscar: invalid-free on address %s (a custom-allocator view: revoke "
                            "it with oscar_view_revoke)" % hexaddr(v["item"])))


EXPECTED_MISUSE = {
    "revoke_ok": "OSCAR_OK",
    "revoke_twice": "OSCAR_EREVOKED",
    "revoke_interior": "OSCAR_EINVAL",
    "revoke_malloc": "OSCAR_ENOTOURS",
    "create_malloc": "OSCAR_ENOTOURS",
    "create_of_view": "OSCAR_ENOTOURS",
    "create_past_end": "OSCAR_ENOTOURS",
    "create_null_out": "OSCAR_EINVAL",
    "revoke_arena": "OSCAR_ENOTOURS",
    "arena_free_busy": "OSCAR_EBUSY",
    "arena_free_interior": "OSCAR_EINVAL",
    "arena_free_malloc": "OSCAR_ENOTOURS",
    "arena_free": "OSCAR_OK",
    "arena_free_twice": "OSCAR_EREVOKED",
    "create_freed_arena": "OSCAR_ENOTOURS",
}


def test_misuse_returns_codes_and_prints_one_line_each(runner):
    res = runner.oscar("custom_pool", "misuse")
    assert res.returncode == 0, res.describe()
    got = dict(l.split(" ", 1) for l in res.stdout.splitlines() if " " in l)
    for name, code in EXPECTED_MISUSE.items():
        assert got.get(name) == code, (name, res.describe())
    assert got["create_malloc_view_null"] == "1" and got["origin_of_malloc"] == "1"
    assert "a still fine" in res.stdout and res.stdout.rstrip().endswith("done")
    errors = [l for l in res.stderr.splitlines() if l.startswith("oscar:")]
    wrong = sum(1 for c in EXPECTED_MISUSE.values() if c != "OSCAR_OK")
    assert len(errors) == wrong, res.describe()
    for line in errors:
        assert re.fullmatch(r"oscar: api-error: oscar_(view_create|view_revoke|arena_free)\(%s\): "
                            r"OSCAR_E[A-Z]+: .+" % HEX, line), line
    assert any("OSCAR_EREVOKED: the view was already revoked" in l for l in errors)


def test_fork_view_shared_into_child_isolated_from_parent(runner):
    res = runner.oscar("custom_pool", "fork")
    assert_clean_run(res)
    out = res.stdout.splitlines()
    assert "child sees parent" in out and "child item child item" in out
    assert "child exit 0" in out
    assert "parent sees parent" in out and "parent arena sees parent" in out
    assert res.stdout == runner.glibc("custom_pool", "fork").stdout


def test_fork_child_uaf_of_view_is_caught_in_child_only(runner):
    res = runner.oscar("custom_pool", "fork_uaf")
    assert res.returncode == 0, res.describe()
    assert "child signal %d" % signal.SIGSEGV in res.stdout
    assert re.search(UAF % HEX, res.stderr)
    assert "NOT REACHED" not in res.stdout
    assert "parent sees parent" in res.stdout


def test_threads_create_and_revoke_concurrently(runner):
    res = runner.oscar("custom_pool", "threads", timeout=120)
    assert_clean_run(res)
    assert "bad bytes 0" in res.stdout and "free slots 4096" in res.stdout


# --- region allocators: one malloc'd block, freed at once (already protected) --------------

def test_region_allocator_correct(runner):
    assert_same_output(runner.oscar("custom_region"), runner.glibc("custom_region"))


def test_region_allocator_stale_subobject_faults(runner):
    res = runner.oscar("custom_region", "uaf")
    v = parse_values(res.stdout)
    assert_report(res, signal.SIGSEGV, uaf_line(v["node"] + 12))
