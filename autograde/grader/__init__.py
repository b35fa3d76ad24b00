"""Grading untrusted submissions, laid out as nbgrader lays out its own package.

- Commands: command (autograde/grade: a class's submissions), selfcheck (one notebook, for a student),
  gradescope (the Gradescope autograder).
- The pipeline every command runs: core (grade_chapter over job workspaces, the results imported into one
  gradebook; grade_one for a single notebook).
- nbgrader's steps: steps/ (the preprocessors nbgrader_config.py adds), workspace (an nbgrader course folder,
  its commands and gradebook), containment (the kernel's sandbox), limits (every limit, written once),
  test_plans (what the harness does around each test cell).
- Inputs and records: submissions (what a folder or zip holds), incidents (what happened, in words, and what it
  cost), releases (earlier releases of a chapter), report (the table a command prints), secrets (lines a
  student must not see).
"""
