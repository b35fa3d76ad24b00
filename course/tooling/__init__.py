"""Instructor-side tools: the build, the nbgrader workspace, mutants and the demo."""
