"""The probe port and its pure decisions: the port Protocol, the command target policy, argv
building, observation assembly, the target registry and the conformance arm
(preflight-adapter.md §3–§5). Nothing here touches a process or a file; ``adapters/`` does."""
