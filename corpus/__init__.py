"""Our corpus: suites of real systems under test with seeded defects, their contracts, probes and baselines.

Data lives under ``corpus/suites/<name>/``. The code that stages, mutates, qualifies and runs a suite is
product code in :mod:`evalquality_core.suite` (``eval-quality suite …``); ``corpus/tools/`` keeps thin
aliases (``python -m corpus.tools.generate``) for this corpus.
"""
