"""Staging: a fresh workspace for one run of a suite's system, clean or with one declared mutation.

A staged workspace is a directory with two children (harness.md A.7):

* ``system/`` — a copy of the suite's ``system/`` (or of a sibling suite's, when ``suite.toml`` says
  ``system-from``), with at most one mutation from ``mutations/`` applied to its target file. The system lives beside the working directory, never inside it, so
  a run cannot read its own source (the ``source-code`` forbidden input).
* ``work/``   — the working directory of every command, staged from the suite's fixture sets as
  ``suite.toml`` places them. The suite's evaluation folder (contract, probes, mutations, evidence,
  trials) is never copied, so a target cannot read which defect was planted.

Every workspace is new: two legs never share one, because a leg would read the other's artifacts.
The pre-flight flow stages one per leg with :func:`stage_for_leg`; the reference evaluator and the
generator stage one per trial with :func:`stage_workspace`.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalquality_core.canonical.digest import digest_bytes, digest_directory
from evalquality_core.faults import RuntimeFault
from evalquality_core.suite.layers import (
    LayerHandle,
    LayerStore,
    default_store,
    layer_members,
    layer_paths,
    source_layer_members,
)
from evalquality_core.suite.load import (
    Mutation,
    StagingError,
    mutation_for_probe,
    read_suite_settings,
    suite_dir,
    system_dir_of,
    tree_digest,
    unlinked_folder,
)

__all__ = [
    "Mutation",
    "StagedWorkspace",
    "StagingError",
    "check_layers",
    "default_store",
    "fault_leg_ids",
    "layer_paths",
    "layers_intact",
    "refuse_links_outside_layers",
    "mutation_for_leg",
    "stage_for_leg",
    "stage_workspace",
    "staged_digests",
    "system_members",
    "system_digest",
    "tree_digest",
]

@dataclass(frozen=True)
class StagedWorkspace:
    """A staged workspace: its root, the two children, and digests that identify what was staged."""

    root: Path
    system_dir: Path
    work_dir: Path
    mutation_id: str | None
    system_digest: str
    work_digest: str
    #: The dependency layers linked in from ``store`` (empty when they were copied).
    layers: tuple[LayerHandle, ...] = ()
    store: LayerStore | None = None


def check_layers(staged: Any) -> list[str]:
    """After a leg ran in ``staged`` (a :class:`StagedWorkspace`, or anything else: no layers): why each
    of its linked layers is no longer as verified (each such generation is tainted and rebuilt); empty
    when every one is intact."""
    if not isinstance(staged, StagedWorkspace) or staged.store is None:
        return []
    return [problem for problem in (staged.store.check(handle) for handle in staged.layers) if problem]


def layers_intact(staged: Any) -> None:
    """After a leg ran in ``staged``: raise a ``digest-mismatch`` :class:`RuntimeFault` (the leg's answer
    is not trusted, never cached) when a linked layer changed under it (:func:`check_layers`)."""
    changed = check_layers(staged)
    if changed:
        raise RuntimeFault("digest-mismatch", "StagedWorkspace.layers", "; ".join(changed))


def fault_leg_ids(probe: dict[str, Any]) -> set[str]:
    """The leg ids of a probe's manifestation witnesses: the legs that run against its mutation."""
    return {
        defect["manifestationWitness"]["legId"]
        for defect in probe.get("defects", [])
        if defect.get("manifestationWitness") is not None
    }


def mutation_for_leg(suite: str | Path, probe: dict[str, Any], leg_id: str) -> Mutation | None:
    """Which mutation a pre-flight leg of ``probe`` runs against.

    A seeded-fault leg (a manifestation witness of one of the probe's defects) runs against the
    probe's mutation; every other leg (sensitivity, control) runs against the clean system, which is
    what makes those legs clean for ``seeded-faults-scoped`` (preflight-adapter.md §2.4).
    """
    if leg_id in fault_leg_ids(probe):
        mutation = mutation_for_probe(suite, probe["probeId"])
        if mutation is None:
            raise StagingError(f"probe {probe['probeId']} has a fault leg {leg_id!r} but no declared mutation")
        return mutation
    return None


def refuse_links(directory: Path) -> None:
    """Refuse a symlink anywhere in what is staged: copying would follow it and put whatever it names on
    the host into the workspace (a suite is untrusted input like the system it holds)."""
    for path in [directory, *directory.rglob("*")]:
        if path.is_symlink():
            raise StagingError(f"{path}: a symlink; a suite's system and fixtures must be plain files and folders")


def refuse_links_outside_layers(suite: str | Path, system: Path | None = None) -> list[str]:
    """The suite's layers ('/' paths under system/) after checking its system (``system``, else its own):
    a symlink outside a layer, or one in a layer leaving it, refused on one line as staging refuses it."""
    source = suite_dir(suite)
    system = system or system_dir_of(source)
    paths = layer_paths(system, read_suite_settings(source), source / "suite.toml")
    system_members(system, paths)
    return paths


def system_digest(suite: str | Path, system: Path) -> str:
    """The digest :func:`stage_workspace` records for ``system`` (a copy of the suite's system, e.g. the
    generator's disposable one) staged clean: ``tree_digest``'s for a system without links, each layer's
    confined links digested as links."""
    source = suite_dir(suite)
    paths = layer_paths(system, read_suite_settings(source), source / "suite.toml")
    return _digest_of(system_members(system, paths, remember=False), system)


def _inside_layer(relative: str, layers: Iterable[str]) -> bool:
    return any(relative == layer or relative.startswith(layer + "/") for layer in layers)


def _mutated_layer_file(mutation: Mutation, system: Path, layers: list[str], members: dict[str, str]) -> tuple[str, bytes] | None:
    """For a mutation whose target lies in a layer: (its path under system/, the mutated bytes); None
    for a target outside every layer. The target must be a plain file (no link on the way: a link's
    target would be edited through it)."""
    relative = Path(mutation.target).relative_to("system").as_posix()
    if not _inside_layer(relative, layers):
        return None
    path = system
    for part in relative.split("/"):
        path = path / part
        if path.is_symlink():
            raise StagingError(f"{mutation.source_path}: target {mutation.target} passes through a symlink ({path})")
    if relative not in members or not path.is_file():
        raise StagingError(f"{mutation.source_path}: target {mutation.target} is not a file of the system")
    # read_text/encode as the copied path's read_text/write_text do (universal newlines)
    return relative, mutation.apply(path.read_text(encoding="utf-8")).encode("utf-8")


def system_members(system: Path, layers: list[str], *, remember: bool = True) -> dict[str, str]:
    """Member digests of ``system`` outside its ``layers`` (a symlink there refused), and of each layer
    (its links kept when confined to it, :mod:`evalquality_core.suite.layers`). Plain files digest as
    ``tree_digest`` does, so a system without links has the digest it always had. ``remember``: a layer's
    members are kept per process until its signature moves (a suite's layers; not a workspace's copy)."""
    members: dict[str, str] = {}
    for folder, dirs, files in os.walk(system, followlinks=False):
        base = Path(folder)
        kept = []
        for name in sorted(dirs):
            path = base / name
            relative = path.relative_to(system).as_posix()
            if path.is_symlink():
                if relative in layers:  # a staged workspace's linked layer: its members are the layer's
                    continue
                raise StagingError(f"{path}: a symlink; a suite's system and fixtures must be plain files and folders")
            if relative in layers:
                members.update(source_layer_members(path, relative) if remember else layer_members(path, relative))
            else:
                kept.append(name)
        dirs[:] = kept
        for name in files:
            path = base / name
            relative = path.relative_to(system).as_posix()
            if path.is_symlink():
                raise StagingError(f"{path}: a symlink; a suite's system and fixtures must be plain files and folders")
            if path.is_file():
                members[relative] = digest_bytes(path.read_bytes())
    return members


def stage_workspace(
    suite: str | Path,
    destination: Path,
    mutation: Mutation | None = None,
    *,
    system_source: Path | None = None,
    layers: LayerStore | None = None,
) -> StagedWorkspace:
    """Stage a fresh workspace for ``suite`` at ``destination`` (which must not exist or be empty).

    Copies the suite's ``system/`` (or ``system_source``, a disposable copy the generator mutates
    and restores in place) applying ``mutation`` to its target, and every fixture set into
    ``work/``. The system's dependency layers (:func:`~evalquality_core.suite.layers.layer_paths`) are
    copied too, links confined to them kept as links; given a ``layers`` store, each is instead a
    symlink to its verified generation there (:mod:`evalquality_core.suite.layers`), and the caller
    runs :func:`check_layers` after the leg. Raises :class:`StagingError` on anything it cannot
    stage faithfully.
    """
    source = suite_dir(suite)
    settings = read_suite_settings(source)
    destination = Path(destination)
    if destination.exists() and any(destination.iterdir()):
        raise StagingError(f"{destination}: a workspace must be staged into a new, empty directory")
    system_dir = destination / "system"
    work_dir = destination / "work"
    system = system_source or system_dir_of(source)  # its own system/, or a sibling's (system-from)
    if not system.is_dir():
        raise StagingError(f"{system}: the system to stage is not a directory")
    paths = layer_paths(system, settings, source / "suite.toml")
    members = system_members(system, paths)  # refuses a link outside a layer, or leaving its layer
    edited = None if mutation is None else _mutated_layer_file(mutation, system, paths, members)
    # Links are copied as links: only confined links inside layers are left after the check above.
    shutil.copytree(
        system, system_dir, symlinks=True,
        ignore=(lambda folder, names: [n for n in names if (Path(folder) / n).relative_to(system).as_posix() in paths])
        if layers is not None else None,
    )
    handles: list[LayerHandle] = []
    if layers is not None:
        for relative in paths:
            prefix = relative + "/"
            mine = {path: value for path, value in members.items() if path.startswith(prefix)}
            edit = None
            if edited is not None and edited[0].startswith(prefix):
                # A mutation in this layer: its own digest, so its own stored copy (the clean one untouched).
                mine[edited[0]] = digest_bytes(edited[1])
                edit = (edited[0].removeprefix(prefix), edited[1])
            handle = layers.acquire(system / relative, relative, digest_directory(mine), edit)
            handles.append(handle)
            (system_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(handle.folder, system_dir / relative, target_is_directory=True)
    if mutation is not None and not (layers is not None and edited is not None):
        target = destination / mutation.target
        if target.is_symlink() or not target.is_file():
            raise StagingError(f"{mutation.source_path}: target {mutation.target} is not a file of the system")
        target.write_text(mutation.apply(target.read_text(encoding="utf-8")), encoding="utf-8")
    work_dir.mkdir(parents=True, exist_ok=True)
    for fixture_set, place in sorted(settings["fixtures"].items()):
        fixture = unlinked_folder(source, "fixtures", fixture_set)  # neither fixtures/ nor the set a link
        if not fixture.is_dir():
            raise StagingError(f"{source / 'suite.toml'}: fixture set {fixture_set!r} is not a directory")
        refuse_links(fixture)
        shutil.copytree(fixture, work_dir / place, dirs_exist_ok=True, symlinks=False)
    return StagedWorkspace(
        root=destination,
        system_dir=system_dir,
        work_dir=work_dir,
        mutation_id=None if mutation is None else mutation.mutation_id,
        system_digest=_digest_of(
            {**system_members(system_dir, paths, remember=False), **{k: v for h in handles for k, v in h.members.items()}}, system_dir
        ),
        work_digest=tree_digest(work_dir),
        layers=tuple(handles),
        store=layers,
    )


def stage_for_leg(
    suite: str | Path, probe: dict[str, Any], leg_id: str, destination: Path, *, layers: LayerStore | None = None
) -> StagedWorkspace:
    """Stage the workspace one pre-flight leg of ``probe`` runs in (see :func:`mutation_for_leg`);
    ``layers`` as for :func:`stage_workspace`."""
    return stage_workspace(suite, destination, mutation_for_leg(suite, probe, leg_id), layers=layers)


def _members(root: Path, prefix: str = "") -> dict[str, str]:
    """``tree_digest``'s members of ``root`` (relative '/' paths under ``prefix`` → raw-bytes digests)."""
    return {
        posixpath.normpath(posixpath.join(prefix, path.relative_to(root).as_posix())): digest_bytes(path.read_bytes())
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _digest_of(members: dict[str, str], where: Path) -> str:
    if not members:
        raise StagingError(f"{where}: nothing to digest")
    return digest_directory(members)


def staged_digests(
    suite: str | Path, mutations: Iterable[Mutation | None]
) -> dict[str | None, tuple[str, str]]:
    """What :func:`stage_workspace` would record as ``(system_digest, work_digest)`` for each of
    ``mutations`` (``None``: the clean system), keyed by mutation id, computed without copying anything.

    Planning keys every leg by these digests, and copying the system and fixtures once per probe only to
    digest the copy was most of a cached pre-flight's own cost (benchmarks/bench_scale.py). The refusals
    are :func:`stage_workspace`'s (symlinks, a target that is not a file, a ``find`` not there exactly
    once, a fixture set that is not a folder); a test holds the digests equal to a real staging's.
    """
    source = suite_dir(suite)
    settings = read_suite_settings(source)
    system = system_dir_of(source)
    if not system.is_dir():
        raise StagingError(f"{system}: the system to stage is not a directory")
    paths = layer_paths(system, settings, source / "suite.toml")
    clean = system_members(system, paths)
    work: dict[str, str] = {}
    for fixture_set, place in sorted(settings["fixtures"].items()):
        fixture = unlinked_folder(source, "fixtures", fixture_set)  # neither fixtures/ nor the set a link
        if not fixture.is_dir():
            raise StagingError(f"{source / 'suite.toml'}: fixture set {fixture_set!r} is not a directory")
        refuse_links(fixture)
        work.update(_members(fixture, place))  # a later set's file replaces an earlier one's, as copytree does
    folders = {posixpath.dirname(path) for path in work}
    clash = sorted(path for path in work if any(folder == path or folder.startswith(path + "/") for folder in folders))
    if clash:
        raise StagingError(f"{source / 'fixtures'}: {clash[0]} is a file in one fixture set and a folder in another")
    work_digest = _digest_of(work, source / "fixtures")
    digests: dict[str | None, tuple[str, str]] = {}
    for mutation in mutations:
        members = clean
        if mutation is not None:
            relative = Path(mutation.target).relative_to("system").as_posix()
            target = system / relative
            if _inside_layer(relative, paths):
                _mutated_layer_file(mutation, system, paths, clean)  # the same refusals as staging's
            if relative not in clean or target.is_symlink() or not target.is_file():
                raise StagingError(f"{mutation.source_path}: target {mutation.target} is not a file of the system")
            # read_text/encode as stage_workspace's read_text/write_text do (universal newlines)
            members = {**clean, relative: digest_bytes(mutation.apply(target.read_text(encoding="utf-8")).encode("utf-8"))}
        key = None if mutation is None else mutation.mutation_id
        digests[key] = (_digest_of(members, system), work_digest)
    return digests
