"""The bundled example students (autograde/examples/), made from the release, the catalogue and the corpus."""
from __future__ import annotations

from nbformat import NotebookNode

from autograde import notebook as nbk
from autograde.authoring import catalogue as mut
from autograde.authoring.catalogue import Catalogue, ExampleStudent
from autograde.corpus.attacks import attack
from autograde.paths import source_path


def make_examples(chapter: str, release: NotebookNode) -> dict[str, NotebookNode]:
    """The bundled example students' notebooks, derived from the release and the mutant catalogue."""
    catalogue = mut.load(chapter)
    source = nbk.read(source_path(chapter))
    clean = nbk.copy_notebook(release)
    clean.metadata.pop("course", None)  # a student's notebook carries no build stamp
    filled = mut.filled_submission(source, clean)
    out: dict[str, NotebookNode] = {}
    for ex in catalogue.examples:
        if ex.kind == "solution":
            nb = filled
        elif ex.kind == "blank":
            nb = clean
        elif ex.kind == "mutants":
            nb = catalogue.apply(filled, [catalogue.mutant(name) for name in ex.mutants])
        elif ex.kind == "sample":
            nb = catalogue.apply(filled, catalogue.sample())
        elif ex.kind == "attack":
            found = attack(chapter, ex.attack)
            if found.extra_files:
                raise ValueError(f"{chapter}: example {ex.student}: attack {ex.attack} needs files beside the notebook")
            nb = found.notebook
        else:
            raise ValueError(f"{chapter}: example {ex.student} has unknown kind {ex.kind!r}")
        out[ex.student] = nb
    return out


def example_losses(catalogue: Catalogue, example: ExampleStudent, tests: set[str]) -> set[str]:
    """The test cells an example student must score 0 on (tests: all the chapter's test cells)."""
    if example.kind == "blank":
        return set(tests)
    if example.kind == "attack":
        return set(attack(catalogue.chapter, example.attack).loses)
    if example.kind == "sample":
        return {g for entry in catalogue.sample() for g in getattr(entry, "loses", ())}
    return {g for name in example.mutants for g in catalogue.mutant(name).loses}
