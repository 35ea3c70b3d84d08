"""Seal (artifacts.md §4): the brief an evaluator may see, and its direction prose."""

from evalquality_core.seal.directions import render_direction_text
from evalquality_core.seal.seal import audit_brief_scripting, seal, seal_contract

__all__ = ["audit_brief_scripting", "render_direction_text", "seal", "seal_contract"]
