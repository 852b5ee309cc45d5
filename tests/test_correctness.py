"""Correct programs behave exactly as under glibc: exit 0, no Oscar report, identical stdout.

The programs check their own expectations (printing "FAIL ..." and exiting 1) and print only
allocator-independent values, so a byte comparison with glibc is meaningful.
"""

import pytest

from conftest import MAPPING_LIMIT_WARNING, SLOW_TIMEOUT, assert_same_output

API_PROGRAMS = [
    "api_malloc_calloc",              # malloc(0), free(NULL), calloc zeroing/overflow, huge sizes
    "api_realloc",                    # realloc(NULL,n), realloc(p,0), growth/shrink, reallocarray
    "api_aligned",                    # posix_memalign 8..1 MiB, EINVAL, aligned_alloc, memalign, valloc, pvalloc
    "api_usable_size_errno_mallopt",  # malloc_usable_size, free keeps errno, mallopt/trim/mallinfo2
    "cxx_new_delete",                 # new[]/delete[], nothrow, bad_alloc, alignas(256)
    "cxx_delete_keeps_errno",         # every delete, and allocations that succeed, keep errno
    "cxx_stl",                        # map, unordered_map, vector, string, shared_ptr
    "fork_isolation",                 # parent/child private copies, both allocate after fork
]

STRESS_PROGRAMS = [
    "many_live_objects",              # 300,000 live objects under the default vm.max_map_count
    "many_live_objects_fragmented",   # ... freed every other one first
    "threads_churn",                  # 6 threads malloc/realloc/free with integrity checks
    "threads_producer_consumer",      # objects freed by another thread
    "threads_many",                   # 2,000 threads started and joined
    "fork_with_threads",              # fork while threads are inside the allocator
]


@pytest.mark.parametrize("program", API_PROGRAMS)
def test_same_output_as_glibc(runner, program):
    expected = runner.glibc(program)
    assert "FAIL" not in expected.stdout, expected.describe()
    assert_same_output(runner.oscar(program), expected)


@pytest.mark.parametrize("program", STRESS_PROGRAMS)
def test_stress_same_output_as_glibc(runner, program):
    expected = runner.glibc(program, timeout=SLOW_TIMEOUT)
    assert "FAIL" not in expected.stdout, expected.describe()
    res = runner.oscar(program, timeout=SLOW_TIMEOUT)
    assert_same_output(res, expected, allowed_warnings=[MAPPING_LIMIT_WARNING])

