"""Instructor-side tools: the build, the nbgrader workspace, mutants and the demo; grading untrusted code
(grading: the command; sandbox: the contained kernel; integrity: incidents; corpus: the attacks;
selfcheck and gradescope: the same grading for readers and for Gradescope; bench_grading: throughput)."""
