"""Grading untrusted submissions: command (autograde/grade), workspace (nbgrader course folders), containment
(the kernel's sandbox), steps (the nbgrader preprocessors nbgrader_config.py adds), incidents (what happened,
in words, and what it cost), selfcheck and gradescope (the same grading for self-study and Gradescope)."""
