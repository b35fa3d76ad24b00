"""Code the grader runs inside a student's kernel at grading time: one hidden-test helper module per chapter.

Hidden test cells import their helpers from here (`from autograde.hidden.<chapter> import ...`), so a helper
is written once and never reaches release/, solutions/ or feedback. A graded kernel sees this package and
nothing else of autograde/.
"""
