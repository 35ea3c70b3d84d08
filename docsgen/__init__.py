"""Generators of the documentation's reference pages from the code (``python -m docsgen`` rewrites them).

Each generated page is a pure function of the code it documents; ``tests/test_docs_generated.py`` holds
every page equal to a fresh generation, so a changed flag, exit code, schema or stage fails the test run
until ``python -m docsgen`` is re-run and the pages are committed.
"""
