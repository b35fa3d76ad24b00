"""`make own-engine NB=DIR`: the student's own engine (chapters 2-7 from their notebooks) trains the capstone's
transformer, beside torch.

    python -m autograde.own_engine DIR

DIR holds the student's notebooks, in make lab's layout (DIR/<chapter>/<chapter>.ipynb) or flat (DIR/<chapter>.ipynb).
Three stages, each stopping at the first problem with one line that names the chapter and the exercise:

1. collect (autograde.own_engine.collect): the answer cells of chapters 2-7 and the course's given export cells,
   in the source notebooks' order, become one module per chapter in a package outside git
   (.work/own_engine/own_<name>_<hash>/), the way `make build` writes course/reference/; every import of the
   reference engine of chapters 2-7 points to the student's package instead. Chapter 8's module is the course's model
   code with the same redirection. The module docstring of collect says how cells are chosen and matched.
2. check (autograde.own_engine.checks): every answer the capstone's training runs must be answered; then each piece
   the capstone uses is compared with torch on small inputs (values, dtypes, gradients), bottom-up.
3. train (autograde.own_engine.training): 20 steps of the capstone's model in float64 and in float32 (checkpointed
   blocks), the loss of each step beside torch's.

Exit status 0 and the last line `own engine: capstone loss matches torch over 20 steps (max relative difference X)`
when all agree; 1 with one line for a finding; 2 with one line for a folder that cannot be read as notebooks.
"""
