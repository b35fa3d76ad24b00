"""The instructor's side of the course: never shipped to students, never needed in a student's kernel.

- autograde.authoring: one source, many products (release/, solutions/, course/reference/, examples) and the
  mutant catalogues (`python -m autograde.authoring`).
- autograde.grader: grading untrusted submissions with nbgrader: the command (`autograde/grade`), the
  contained kernel, the pipeline steps nbgrader_config.py adds, incidents, self-check and Gradescope.
- autograde.hidden: what the grader runs inside a student's kernel at grading time (the chapters'
  hidden-test helpers and the harness around each test cell); the only part a graded kernel can see.
- autograde.corpus: the adversarial submissions; autograde.demo: `make demo`; autograde.bench: benchmarks.
- autograde.tests: the project's test suite (`make test`).
Data beside the code: examples/ (the demo's students, generated), mutants/ (per-chapter catalogues).
"""
