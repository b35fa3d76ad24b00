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


def test_the_longest_shared_work_is_handed_out_first(request):
    """xdist hands the groups out in collection order (its reordering by test count is off): longest first, so no
    worker starts minutes of work while the others have finished."""
    from .conftest import _expense

    expense = [_expense(item) for item in request.session.items]
    assert expense == sorted(expense, reverse=True), "conftest's pytest_collection_modifyitems did not order the tests"
    if os.environ.get("PYTEST_XDIST_WORKER") and request.config.getoption("dist", default="no") == "loadgroup":
        assert request.config.option.loadscopereorder is False
