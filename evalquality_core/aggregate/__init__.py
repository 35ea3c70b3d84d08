"""Run-wide strength aggregation (scoring.md §5.5)."""
