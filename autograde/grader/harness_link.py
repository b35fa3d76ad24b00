"""The grader's end of the harness's channel (see autograde.hidden.harness, "the private harness").

A graded kernel has no file of autograde/hidden (the sandbox leaves the folder out). At kernel start the grader
sends, through user_expressions (no input transformer applies, and no student code has run yet), the boot code
below with the harness's source and the hidden modules the chapter's test cells import; the harness then lives
outside sys.modules and answers only signed calls through one audit hook. Each call is a JSON request with a
counter, signed with a key made here for this kernel; each reply comes back signed with the same key and the
request's counter. A reply that is missing or wrongly signed means the notebook stood between the grader and
its harness (it replaced sys.audit or __import__, say): the caller turns that into an incident.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import hmac
import json
import secrets
from pathlib import Path

import autograde

HIDDEN = Path(autograde.__file__).parent / "hidden"
PACKAGE = "autograde.hidden"
MARK = "<autograde hidden: "

BOOT = """\
def _autograde_boot(sources, key):
    import types
    name = "autograde.hidden.harness"
    module = types.ModuleType(name)
    module.__file__ = MARK + name + ">"
    exec(compile(sources.pop(name), module.__file__, "exec"), vars(module))
    codes = {n: compile(s, MARK + n + ">", "exec") for n, s in sources.items()}
    module.install(codes, key)
    return "installed"
"""


class HarnessUnreachable(RuntimeError):
    """The kernel did not answer a harness call with a reply signed by its harness."""


@functools.lru_cache(maxsize=64)  # parsed once per text: a grader boots a kernel per notebook
def _imports(source: str) -> frozenset[str]:
    """The autograde.hidden modules a module imports (at its top or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(PACKAGE + ".")}
    return frozenset(found)


def sources(chapter: str) -> dict[str, str]:
    """The hidden modules a chapter's kernel needs: the package, the harness and the shared modules (the contract,
    the strategies, which test cells also import themselves), the chapter's helper (when it has one) and what they
    import, transitively. Another chapter's helper only when this one imports it."""
    from course import CHAPTERS

    shared = sorted(f"{PACKAGE}.{p.stem}" for p in HIDDEN.glob("*.py")  # what test cells may import themselves
                    if p.stem != "__init__" and p.stem not in CHAPTERS)
    wanted = [*shared, f"{PACKAGE}.{chapter}"]
    out = {PACKAGE: (HIDDEN / "__init__.py").read_text()}
    while wanted:
        name = wanted.pop()
        if name in out:
            continue
        path = HIDDEN / (name[len(PACKAGE) + 1:].replace(".", "/") + ".py")
        if not path.exists():
            continue
        out[name] = path.read_text()
        wanted += sorted(_imports(out[name]) - set(out))
    return out


class HarnessLink:
    """Signed calls to one kernel's harness: boot() once, then call expressions and their verified replies."""

    def __init__(self, chapter: str) -> None:
        self.chapter = chapter
        self.key = secrets.token_hex(32)
        self.count = 0

    def _sign(self, text: str) -> str:
        return hmac.new(self.key.encode(), text.encode(), hashlib.sha256).hexdigest()

    def boot(self) -> str:
        """The expression that installs the harness in a fresh kernel (its value: 'installed')."""
        code = BOOT.replace("MARK", repr(MARK))
        return (f"(lambda g: (exec({code!r}, g), g['_autograde_boot']({sources(self.chapter)!r}, {self.key!r}))[1])"
                "({'__builtins__': __builtins__})")

    def call(self, name: str, payload: object = None) -> tuple[str, int]:
        """(the expression that makes the call, its counter) for the harness call `name` with `payload`."""
        self.count += 1
        request = json.dumps({"n": self.count, "name": name, "payload": payload})
        expression = (f"(lambda b: (__import__('sys').audit('autograde.call', {request!r}, {self._sign(request)!r}, b), "
                      "b[0] if b else None)[1])([])")
        return expression, self.count

    def verify(self, found: dict | None, count: int) -> dict:
        """The harness's reply to call `count`, from its user_expressions entry; HarnessUnreachable if there is
        none or it is not signed by the harness."""
        if not found or found.get("status") != "ok":
            raise HarnessUnreachable("no reply")
        try:
            outer = json.loads(ast.literal_eval(found["data"]["text/plain"]))
            text, signature = outer["reply"], outer["sig"]
        except (ValueError, SyntaxError, KeyError, TypeError) as exc:
            raise HarnessUnreachable("a reply the harness did not write") from exc
        if not (isinstance(text, str) and isinstance(signature, str)
                and hmac.compare_digest(self._sign(f"{count}:{text}"), signature)):
            raise HarnessUnreachable("a reply the harness did not sign")
        return json.loads(text)
