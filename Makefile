# Every target creates and reuses .venv by itself. The venv is rebuilt only
# when pyproject.toml or constraints.txt change (the stamp file tracks that).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PY     := $(BIN)/python

.PHONY: demo test build lab grade selfcheck gradescope bench bench-engine bench-grading clean help

help:
	@echo "make demo   build, autograde the example submissions, print the gradebook"
	@echo "make test   the whole test suite"
	@echo "make build  regenerate release/, solutions/, course/reference/, autograde/examples/"
	@echo "make lab    JupyterLab on your copies of the student notebooks (.work/lab/), on 127.0.0.1"
	@echo "make grade SUBMISSIONS=DIR|ZIP [JOBS=2]  grade students' submissions, contained (see autograde/grade --help)"
	@echo "make selfcheck NB=PATH  grade your own notebook and see what each exercise lost, and why"
	@echo "make gradescope  export each chapter as a Gradescope autograder zip into .work/gradescope/"
	@echo "make student-edition CHAPTER=ch03_vjp_rules DEST=DIR  what a class's students may see up to CHAPTER, ready to push"
	@echo "make bench  measure solution run time, peak memory and autograde cost per chapter"
	@echo "make bench-engine  the reference engine against torch on an MLP step (CPU)"
	@echo "make bench-grading  students per minute at 1 and 2 jobs, and grading overhead over bare execution"
	@echo "make clean  remove run-time state (.work/); keeps .venv"

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[test]'
	@touch $@

build: $(STAMP)
	$(PY) -m autograde.build

demo: $(STAMP)
	$(PY) -m autograde.build --if-stale
	$(PY) -m autograde.demo

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=path/to/submitted-or-folder-or.zip [JOBS=2]"; exit 2; }
	$(PY) -m autograde.build --if-stale
	autograde/grade "$(SUBMISSIONS)" --jobs $(or $(JOBS),1)

selfcheck: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make selfcheck NB=path/to/chapter.ipynb"; exit 2; }
	$(PY) -m autograde.grader.selfcheck "$(NB)"

gradescope: $(STAMP)
	$(PY) -m autograde.build --if-stale
	for ch in $$(ls source); do $(PY) -m autograde.grader.gradescope export $$ch .work/gradescope || exit 1; done

.PHONY: student-edition
student-edition: $(STAMP)
	@test -n "$(CHAPTER)" -a -n "$(DEST)" || { echo "usage: make student-edition CHAPTER=ch03_vjp_rules DEST=path/to/folder"; exit 2; }
	$(PY) -m autograde.build --if-stale
	$(PY) -m autograde.build.edition "$(CHAPTER)" "$(DEST)"

bench: $(STAMP)
	$(PY) -m autograde.bench.notebooks

bench-grading: $(STAMP)
	$(PY) -m autograde.bench.grading

bench-engine: $(STAMP)
	$(PY) -m autograde.bench.engine

# Students work on copies in .work/lab/: release/ stays as generated, and a
# chapter already copied is never overwritten (your answers are kept).
# .jupyter/ is the student-only Jupyter configuration (also used on Binder and in
# the student edition): nbgrader's Validate stays, its instructor tools are off.
# LAB_DIR and LAB_ARGS let the tests start JupyterLab exactly this way.
LAB_DIR ?= .work/lab
lab: $(STAMP)
	@mkdir -p "$(LAB_DIR)"
	@for d in release/*/; do n=$$(basename $$d); [ -e "$(LAB_DIR)/$$n" ] || { cp -r $$d "$(LAB_DIR)/$$n"; echo "copied $$d -> $(LAB_DIR)/$$n"; }; done
	JUPYTER_CONFIG_PATH="$(CURDIR)/.jupyter$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))" \
	  $(BIN)/jupyter lab --ip=127.0.0.1 --no-browser --notebook-dir="$(LAB_DIR)" $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

clean:
	rm -rf .work
