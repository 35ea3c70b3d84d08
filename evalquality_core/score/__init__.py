"""Scoring (scoring.md §3–§5, §8): outcome decision, witness match, ladders, qualification, trials, strength."""
