"""make test's parallel run keeps the tests that share an expensive fixture on one worker (conftest._shared_work).

If pytest-xdist's --dist loadgroup does not group (the group is written into the test's id: `...@group`), every
worker builds the shared fixtures itself: the demo three times over, and two builders of the unprivileged
grader's environment at once. This test carries a group of its own and fails, saying why, where grouping does
not work.
"""
from __future__ import annotations

import os


def test_tests_that_share_a_fixture_share_a_worker(request):
    if not os.environ.get("PYTEST_XDIST_WORKER") or not request.config.getoption("loadgroup", default=False):
        return  # not a parallel run: nothing is shared between workers
    assert request.node.nodeid.endswith("@sentinel"), (
        f"--dist loadgroup did not group this test (its id is {request.node.nodeid}): the shared fixtures are "
        "built on every worker. Check the xdist_group marks reach xdist (conftest's hook runs first) and the "
        "pytest/pytest-xdist pair (pytest-dev/pytest-xdist#1386).")
