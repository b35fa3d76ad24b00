"""Benchmarks (measurements, not tests): notebooks (run time, memory, autograde cost), engine (against torch),
grading (students per minute)."""
