"""The autograd course: shared code for the notebooks and the instructor's tools.

- course.checking: assertion helpers used by every notebook's tests.
- course.reference: the reference engine, exported from the source notebooks by the build.
- course.graphs: pictures of a recorded graph (drawing, step-through widget), for this engine and torch.
- course.data: small seeded datasets generated with NumPy.
- course.text: the capstone's character corpus, written by a seeded grammar; encode, decode, batches.
- course.model: the capstone model's sizes, parameter names, seeded initial weights and decay rule.
- course.threads: one thread count for NumPy's BLAS and torch in timings.
- course.torch_memory: memory and time of a torch training step, on a GPU or on the CPU.
- course.gpu_figures: chapters 6 and 7's measurements on a GPU, and the ones the course recorded on an H200.
- course.autocast_lists: the CUDA autocast lists read from torch's installed header (chapter 6's table; no GPU needed).
The instructor side (build, grader, tests) is the separate package `autograde`; nothing here imports it.
"""

CHAPTERS: tuple[str, ...] = ("ch01_chain_rule", "ch02_tape", "ch03_vjp_rules", "ch04_accumulation", "ch05_grad_modes", "ch06_loss_scaling", "ch07_checkpointing", "ch08_capstone", "ch09_higher_order")
"""Chapter ids, in order; each is an nbgrader assignment with one notebook of the same name."""
