"""Emit: the EvidenceArtifact of a scored trial set (scoring.md §9.1)."""
