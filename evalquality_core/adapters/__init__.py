"""The adapters that touch the world: the command-line probe adapter, the replay adapter that answers
from stored observations, and bounded environment probes (preflight-adapter.md §4; harness.md A.2)."""
