"""Issue 18, item 19: pointers from glibc's own malloc (a library loaded with RTLD_DEEPBIND
binds to it) reach Oscar's free, realloc and malloc_usable_size; they go back to glibc
(src/modes/foreign.h) instead of being reported as invalid frees."""

import pytest

from conftest import assert_same_output

MODES = ["strict", "fast", "protect"]


@pytest.mark.parametrize("mode", MODES)
def test_libc_pointers_go_back_to_libc(runner, mode):
    assert_same_output(runner.oscar("foreign_libc_pointers", env={"OSCAR_MODE": mode}),
                       runner.glibc("foreign_libc_pointers"))


@pytest.mark.parametrize("mode", MODES)
def test_other_foreign_pointers_still_reported(runner, mode):
    """A stack or global pointer is still an invalid free (free_stack_pointer)."""
    res = runner.oscar("free_stack_pointer", env={"OSCAR_MODE": mode})
    assert res.returncode != 0 and any("invalid-free" in l for l in res.oscar_lines()), \
        res.describe()
