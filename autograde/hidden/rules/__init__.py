"""Each graded exercise's contract, as rules a student reads in the exercise and the hidden tests check.

autograde/hidden/rules/<chapter>.py holds RULES, a tuple of Rule: an id, the test cells whose hidden part checks it
(each such check starts with a line `# rule: <id>`), and the sentence the exercise's text shows (in its list of
graded rules, word for word). autograde/tests/test_rules.py holds the three together: every rule has a check in one
of its test cells and stands in its exercise's text, and every hidden test cell checks at least one rule (a concept
check's question is its own rule).

A rule covers a class of inputs or behaviours (the dtypes, 0-d, empty and size-1 shapes, views, special values
it must handle as torch does; what it returns; what it leaves unchanged; its errors; its state across calls; its
effect on memory and the graph). Where torch is the model, the rule says "as torch" over the whole class; where the
exercise narrows it, the rule says so.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

TAG = re.compile(r"^\s*# rule: ([\w.\-]+)\s*$", re.M)
"""the line that starts a rule's check in a hidden test part"""

HEADER = "**Graded rules**"
"""how an exercise's list of rules begins in its markdown"""


@dataclass(frozen=True)
class Rule:
    id: str
    tests: tuple[str, ...]
    """grade_ids of the test cells whose hidden part checks it"""
    text: str
    """what the exercise's text says, one or two sentences, word for word"""


def rules(chapter: str) -> tuple[Rule, ...] | None:
    """The chapter's rules, or None where none are written yet."""
    try:
        module = importlib.import_module(f"autograde.hidden.rules.{chapter}")
    except ModuleNotFoundError:
        return None
    return tuple(module.RULES)


def markdown(rules_of_exercise: tuple[Rule, ...] | list[Rule]) -> str:
    """The block an exercise's markdown shows: the header and one bullet per rule."""
    return (f"{HEADER} (the hidden tests check each on generated inputs, against torch where torch is the model):\n"
            + "\n".join(f"- {r.text}" for r in rules_of_exercise))
