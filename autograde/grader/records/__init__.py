"""Records the pipeline and its steps read and write: limits (every grading limit, written once), settings (what
one run changes in nbgrader_config.py), incidents (what happened to a submission, in words, and what it cost),
releases (what earlier releases of a chapter handed out)."""
