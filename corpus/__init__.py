"""The corpus: suites of real systems under test with seeded defects, their contracts and probes.

Data lives under ``corpus/suites/<name>/``; the tools that stage, mutate, qualify and run them live in
``corpus/tools/``. Run them from the project root (``python -m corpus.tools.generate``).
"""
