# Every target creates and reuses .venv by itself. The venv is rebuilt only
# when pyproject.toml or constraints.txt change (the stamp file tracks that).
#
# The interpreter for a new .venv: PYTHON if given (make PYTHON=/path/to/python3.12 test),
# else the first of python3.11, python3.12, python3.13, python3.14 on PATH or in pyenv's
# versions, else python3, if it is one of SUPPORTED_PYTHONS (keep these in step
# with requires-python in pyproject.toml; the test suite's test_install.py checks).
# An existing .venv is kept; make stops if it has another Python than PYTHON.
#
# torch comes from PyTorch's CPU wheel index (TORCH_INDEX) when it answers;
# TORCH=cuda (or TORCH_INDEX=) takes PyPI's default build, CUDA on Linux (GBs).
# Switching an existing venv: rm -rf .venv first.
SUPPORTED_PYTHONS := 3.11 3.12 3.13 3.14
PYTHON ?=
TORCH  ?= cpu
TORCH_INDEX ?= $(if $(filter cuda,$(TORCH)),,https://download.pytorch.org/whl/cpu)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PY     := $(BIN)/python

# Shell: supported PATH succeeds if PATH runs a Python in SUPPORTED_PYTHONS; sets ver=X.Y.Z.
SUPPORTED_SH = supported() { ver=$$("$$1" -c 'import platform; print(platform.python_version())' 2>/dev/null) && case " $(SUPPORTED_PYTHONS) " in *" $${ver%.*} "*) return 0;; esac; return 1; }

.PHONY: demo test test-exhaustive build lab grade selfcheck own-engine gradescope bench bench-engine bench-capstone bench-grading mutation clean help venv-python constraints

help:
	@echo "make demo   build, autograde the example submissions, print the gradebook"
	@echo "make test   the test suite (every guarantee; the catalogue graded in-process, checked against nbgrader)"
	@echo "make test-exhaustive  every catalogue case graded through nbgrader as well (slow; CI runs it after make test)"
	@echo "make build  regenerate release/, solutions/, course/reference/, autograde/examples/"
	@echo "make lab [SOLUTIONS=1]  JupyterLab on your copies of the student notebooks (.work/lab/), on 127.0.0.1; SOLUTIONS=1 adds the solutions"
	@echo "make grade SUBMISSIONS=DIR|ZIP [JOBS=2] [WEAK=1]  grade students' submissions, contained (see autograde/grade --help)"
	@echo "make selfcheck NB=PATH [WEAK=1]  grade your own notebook and see what each exercise lost, and why"
	@echo "make own-engine NB=DIR  your own engine (chapters 2-7 from your notebooks in DIR, e.g. .work/lab) trains the capstone's transformer, its loss beside torch's"
	@echo "make gradescope  export each chapter as a Gradescope autograder zip into .work/gradescope/"
	@echo "make student-edition CHAPTER=ch03_vjp_rules DEST=DIR  what a class's students may see up to CHAPTER, ready to push"
	@echo "make bench  measure solution run time, peak memory and autograde cost per chapter"
	@echo "make bench-engine [ARGS='--dtype float64']  the reference engine against torch on an MLP step (CPU)"
	@echo "make bench-capstone [ARGS=--profile]  the capstone's training step, engine against torch: tokens/s and their ratio (CPU, one thread)"
	@echo "make mutation [CHAPTER=...]  mutate every graded answer (cosmic-ray), grade each mutant; writes autograde/mutation/report.json"
	@echo "make bench-grading  the grading command against plain nbgrader, side by side (ch01 and ch05; 1 job and one per core)"
	@echo "make clean  remove run-time state (.work/); keeps .venv"
	@echo "make constraints  re-lock constraints.txt from pyproject.toml (uv), for every supported Python"
	@echo "variables: PYTHON=/path/to/python3.X (one of $(SUPPORTED_PYTHONS)); TORCH=cuda for PyPI's CUDA torch"

# An existing .venv must hold a supported Python, and the one PYTHON names if given.
venv-python:
	@if [ -x $(PY) ]; then \
	  $(SUPPORTED_SH); \
	  supported $(PY) || { echo "$(VENV) has Python $${ver:-?}; this course needs one of $(SUPPORTED_PYTHONS): rm -rf $(VENV) and run make again" >&2; exit 1; }; \
	  have=$$ver; \
	  if [ -n "$(PYTHON)" ]; then \
	    want=$$("$(PYTHON)" -c 'import platform; print(platform.python_version())' 2>/dev/null) || { echo "PYTHON=$(PYTHON) does not run" >&2; exit 1; }; \
	    [ "$$want" = "$$have" ] || { echo "$(VENV) has Python $$have, not $$want from PYTHON=$(PYTHON): rm -rf $(VENV) to rebuild it with that one, or leave PYTHON unset" >&2; exit 1; }; \
	  fi; \
	fi

$(STAMP): pyproject.toml constraints.txt | venv-python
	@if [ ! -x $(PY) ]; then \
	  $(SUPPORTED_SH); py=; \
	  if [ -n "$(PYTHON)" ]; then \
	    supported "$(PYTHON)" || { echo "PYTHON=$(PYTHON) is $${ver:+Python }$${ver:-not runnable}; this course needs one of Python $(SUPPORTED_PYTHONS)" >&2; exit 1; }; \
	    py="$(PYTHON)"; \
	  else \
	    root=$$(pyenv root 2>/dev/null || echo "$${PYENV_ROOT:-$$HOME/.pyenv}"); \
	    for m in $(SUPPORTED_PYTHONS); do \
	      for c in $$(command -v python$$m) $$(ls -d "$$root"/versions/$$m.*/bin/python$$m 2>/dev/null); do \
	        supported "$$c" && { py=$$c; break 2; }; \
	      done; \
	    done; \
	    [ -n "$$py" ] || { c=$$(command -v python3) && supported "$$c" && py=$$c; } || \
	      { echo "no Python $(SUPPORTED_PYTHONS) found (python3.X or python3 on PATH, pyenv): install one, or make PYTHON=/path/to/python3.X" >&2; exit 1; }; \
	  fi; \
	  echo "creating $(VENV) with $$py (Python $$ver)"; \
	  "$$py" -m venv --clear $(VENV) || exit 1; \
	fi
	@idx=; if [ -n "$(TORCH_INDEX)" ]; then \
	  if $(PY) -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' "$(TORCH_INDEX)/torch/" >/dev/null 2>&1; \
	  then idx="--extra-index-url $(TORCH_INDEX)"; \
	  else echo "note: $(TORCH_INDEX) does not answer: torch comes from pip's other sources (your pip config's find-links, else PyPI's CUDA build, GBs)"; fi; \
	fi; \
	echo "$(PY) -m pip install -q -c constraints.txt $$idx -e '.[test,mutation]'"; \
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt $$idx -e '.[test,mutation]'
	@touch $@

# Regenerate constraints.txt after changing dependencies in pyproject.toml. One
# universal lock: environment markers pick a pin per Python where one version
# cannot serve them all. The pins already there are kept unless they must move
# (uv reads the file it writes as preferences; --upgrade-package NAME moves one).
constraints: $(STAMP)
	$(BIN)/uv pip compile --no-python-downloads pyproject.toml --extra test --extra mutation --universal --python-version $(firstword $(SUPPORTED_PYTHONS)) -o constraints.txt

build: $(STAMP)
	$(PY) -m autograde.authoring

demo: $(STAMP)
	$(PY) -m autograde.authoring --if-stale
	$(PY) -m autograde.demo

# The suite's parts that share an expensive run (the demo, a chapter's verdicts, a corpus run) stay on one worker
# (autograde/tests/conftest.py); TEST_WORKERS of them run side by side. TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 3
test: $(STAMP)
	$(PY) -m pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup) --durations=25 $(PYTEST_ARGS)

test-exhaustive: $(STAMP)
	$(PY) -m pytest -m exhaustive $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup) $(PYTEST_ARGS)

grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=path/to/submitted-or-folder-or.zip [JOBS=2]"; exit 2; }
	$(PY) -m autograde.authoring --if-stale
	autograde/grade "$(SUBMISSIONS)" $(if $(JOBS),--jobs $(JOBS)) $(if $(WEAK),--weak-containment)

selfcheck: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make selfcheck NB=path/to/chapter.ipynb"; exit 2; }
	$(PY) -m autograde.grader.apps.selfcheck "$(NB)" $(if $(WEAK),--weak-containment)

# Your chapters 2-7 (DIR/<chapter>/<chapter>.ipynb as make lab has them, or DIR/<chapter>.ipynb) become a package in
# .work/own_engine/; each piece the capstone uses is checked against torch, then the capstone trains on it.
own-engine: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make own-engine NB=path/to/folder (your notebooks: .work/lab after make lab, or a folder of chapter notebooks)"; exit 2; }
	$(PY) -m autograde.own_engine "$(NB)"

gradescope: $(STAMP)
	$(PY) -m autograde.authoring --if-stale
	for ch in $$(ls source); do test -f source/$$ch/$$ch.ipynb || continue; $(PY) -m autograde.grader.apps.gradescope export $$ch .work/gradescope $(if $(WEAK),--weak-containment) || exit 1; done

.PHONY: student-edition
student-edition: $(STAMP)
	@test -n "$(CHAPTER)" -a -n "$(DEST)" || { echo "usage: make student-edition CHAPTER=ch03_vjp_rules DEST=path/to/folder"; exit 2; }
	$(PY) -m autograde.authoring --if-stale
	$(PY) -m autograde.authoring.edition "$(CHAPTER)" "$(DEST)"

bench: $(STAMP)
	$(PY) -m autograde.bench.notebooks

bench-grading: $(STAMP)
	$(PY) -m autograde.bench.grading

bench-engine: $(STAMP)
	$(PY) -m autograde.bench.engine $(ARGS)

bench-capstone: $(STAMP)
	$(PY) -m autograde.bench.capstone $(ARGS)

# The measure of the hidden tests: cosmic-ray's operators on every graded answer, each mutant graded in-process.
# Rewrites autograde/mutation/report.json and survivors.json (commit them). CHAPTER=ch03_vjp_rules for one chapter.
mutation: $(STAMP)
	$(PY) -m autograde.mutation $(CHAPTER)

# Students work on copies in .work/lab/: release/ stays as generated, and a
# chapter already copied is never overwritten (your answers are kept).
# .jupyter/ is the student-only Jupyter configuration (also used on Binder and in
# the student edition): nbgrader's Validate stays, its instructor tools are off.
# LAB_DIR and LAB_ARGS let the tests start JupyterLab exactly this way.
LAB_DIR ?= .work/lab
lab: $(STAMP)
	@mkdir -p "$(LAB_DIR)"
	@for d in release/*/; do n=$$(basename $$d); [ -e "$(LAB_DIR)/$$n" ] || { cp -r $$d "$(LAB_DIR)/$$n"; echo "copied $$d -> $(LAB_DIR)/$$n"; }; done
	@$(if $(SOLUTIONS),rm -rf "$(LAB_DIR)/solutions" && cp -r solutions "$(LAB_DIR)/solutions" && echo "solutions -> $(LAB_DIR)/solutions (a fresh copy each time)",:)
	JUPYTER_CONFIG_PATH="$(CURDIR)/.jupyter$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))" \
	  $(BIN)/jupyter lab --ip=127.0.0.1 --no-browser --notebook-dir="$(LAB_DIR)" $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

clean:
	rm -rf .work
