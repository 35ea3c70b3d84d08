"""The ``eval-quality`` command line: one core call per command, artifacts on stdout, diagnostics on
stderr, exit codes of preflight-adapter.md §7.4."""
