"""A suite: any folder holding a system under test, its fixtures, target registry, contract, probes and
mutations — ours under ``corpus/suites/``, a user's anywhere.

The modules, each one concept (harness.md A.1–A.10):

* :mod:`~evalquality_core.suite.load`      — reading a suite's files, references relative to the suite folder;
* :mod:`~evalquality_core.suite.staging`   — a fresh workspace per run, clean or with one mutation;
* :mod:`~evalquality_core.suite.evaluator` — the reference evaluator: trials and pre-flight verdicts;
* :mod:`~evalquality_core.suite.generate`  — the probe generator: qualification evidence, derived fields.

Like the probe adapters, these touch files and processes (tests/core/test_layers.py allows it).
"""
