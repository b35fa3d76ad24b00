"""Step: record code a student may not use (torch, this chapter's reference engine, patched helpers) and its cost."""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

from autograde.grader import incidents


class DetectCheating(NbGraderPreprocessor):
    """Record code a student may not use (torch, this chapter's reference engine, patched helpers...) and its cost.

    Runs after OverwriteCells, on the notebook as it will run. The cost (the
    exercise the code belongs to) is applied after execution by ApplyIncidents.
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        nbg = resources["nbgrader"]
        answer_names = {}
        with Gradebook(nbg["db_url"]) as gb:
            notebook = gb.find_notebook(nbg["notebook"], nbg["assignment"])
            for cell in notebook.source_cells:
                if cell.name in {c.name for c in notebook.solution_cells}:
                    answer_names[cell.name] = incidents.defined_names(cell.source)
        incidents.add(nb, incidents.cheating(nb, nbg["assignment"], answer_names))
        return nb, resources
