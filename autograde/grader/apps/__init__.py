"""Commands, each run as `python -m autograde.grader.apps.<name>`: grade (autograde/grade, a class's submissions),
selfcheck (one notebook, for a student), gradescope (export and run the Gradescope autograder). Each reads its
arguments into a Settings record and grades through autograde.grader.core."""
