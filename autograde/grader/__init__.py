"""Grading untrusted submissions, laid out as nbgrader lays out its own package (apps, converters,
preprocessors, api).

- apps/: the commands (grade: autograde/grade, a class's submissions; selfcheck: one notebook, for a student;
  gradescope: the Gradescope autograder).
- core: the pipeline every command runs (grade_chapter: nbgrader autograde over job workspaces, the results
  imported into one gradebook, one Result per student; grade_one: a single notebook through grade_chapter),
  on a workspace (an nbgrader course folder: generate_assignment and generate_feedback run nbgrader's apps in
  this process, autograde an nbgrader process), with containment (the kernel's sandbox), submissions (what a
  folder or zip holds), test_plans (what the harness does around each test cell), report (the table a command
  prints) and secrets (lines a student must not see).
- steps/: the preprocessors nbgrader_config.py adds to nbgrader's pipelines, each holding its own logic.
- records/: limits, settings, incidents, releases.
"""
