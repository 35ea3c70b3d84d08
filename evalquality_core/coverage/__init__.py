"""The AD-20 coverage discipline rules (scoring.md §6)."""
