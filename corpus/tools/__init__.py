"""Corpus tools: staging (workspaces), the probe generator and checker, and the reference evaluator."""
