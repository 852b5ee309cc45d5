"""Run CPython standard-library test modules and print their per-module results as JSON.

Run by tests/test_real_suites.py with Debian's /usr/bin/python3 (package
libpython3.11-testsuite), PYTHONMALLOC=malloc, once under glibc and once per Oscar mode:

    /usr/bin/python3 python_suite.py test_json test_re ...

One process per module (the caller runs several at once); each prints one line
    RESULT {"module": ..., "run": N, "failures": [...], "errors": [...], "skipped": N,
            "expected_failures": N, "unexpected_successes": [...], "seconds": S}
after the module's own (quiet) output. Like regrtest without -u, no optional resource
(network, cpu, largefile, ...) is enabled, so the same tests run everywhere.
"""

import json
import os
import sys
import tempfile
import time
import unittest


class CountingResult(unittest.TestResult):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.ids_failed = []
        self.ids_error = []
        self.ids_unexpected = []

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.ids_failed.append(test.id())

    def addError(self, test, err):
        super().addError(test, err)
        self.ids_error.append(test.id())

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            (self.ids_failed if failed else self.ids_error).append(subtest.id())

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.ids_unexpected.append(test.id())


def run_module(name):
    from test import support
    support.use_resources = []  # what regrtest does without -u
    support.verbose = 0
    support.failfast = False
    support.match_tests = None
    support.ignore_tests = None
    start = time.monotonic()
    loader = unittest.TestLoader()
    result = CountingResult()
    try:
        suite = loader.loadTestsFromName("test." + name)
    except unittest.SkipTest as exc:  # the whole module skips itself at import
        suite = None
        result.skipped.append((name, str(exc)))
    except BaseException as exc:  # an import error is a result to compare, not a crash
        suite = None
        result.ids_error.append("%s (import: %s: %s)" % (name, type(exc).__name__, exc))
    if suite is not None:
        suite.run(result)
    for test, text in result.failures + result.errors:
        sys.stderr.write("=== %s\n%s\n" % (test, text[-3000:]))
    # Leftover threads and children would outlive the report.
    support.reap_children()
    return {
        "module": name,
        "run": result.testsRun,
        "failures": sorted(result.ids_failed),
        "errors": sorted(result.ids_error),
        "skipped": len(result.skipped),
        "expected_failures": len(result.expectedFailures),
        "unexpected_successes": sorted(result.ids_unexpected),
        "seconds": round(time.monotonic() - start, 2),
    }


def main():
    for name in sys.argv[1:]:
        with tempfile.TemporaryDirectory(prefix="oscar-pytest-") as cwd:
            os.chdir(cwd)
            report = run_module(name)
            os.chdir("/")
        sys.stdout.flush()
        sys.stderr.flush()
        print("RESULT " + json.dumps(report, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
