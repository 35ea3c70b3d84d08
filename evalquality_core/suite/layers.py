"""Read-only dependency layers: a system's heavy, read-only folders staged once, shared by every leg.

A suite's system may carry a dependency folder far larger than its own code (an npm tool server's
``node_modules/``: thousands of files). Copying it into every leg's workspace dominated a leg's cost, so
such a folder is a *layer*:

* **Which folders.** ``system/node_modules`` when present, plus every folder ``suite.toml`` lists in
  ``layers = ["vendor/lib", ...]`` (paths under ``system/``; no ``..``, not absolute, none inside another,
  none a symlink). See :func:`layer_paths`.
* **Links.** A symlink inside a layer is kept when it resolves, component by component and never
  following anything outside, to a path inside that same layer (npm's ``.bin/x -> ../pkg/bin/x.js``);
  any other link in a layer, and any link in the system outside a layer, is refused on one line.
  See :func:`confined`.
* **Store.** A layer is copied once per content digest into ``<home>/layers/<digest>/gen-<id>/<name>``
  (a *generation*), and each leg's ``system/<layer>`` is a symlink to that folder. Nothing is copied per leg.
* **Trust.** A target runs as the same user as the harness, so it can write through that link into the
  shared generation, and no permission bit stops it. A generation is therefore never trusted blindly:
  when first used by a process its files are re-digested (content) and a *signature* is recorded in
  memory (type, inode, size, mtime and ctime of every entry); before each leg reuses it and after each
  leg used it, the signature is compared again. Any write, truncation, chmod, utime, new or removed
  entry changes a ctime, which the target cannot set back. A changed generation is *tainted*: renamed
  away and removed, so the leg that saw it (and every concurrent leg linked to it, whose own check then
  finds it gone) ends in a ``digest-mismatch`` fault, never cached, and the next leg builds a fresh one.

This module touches files (it is an adapter beside :mod:`evalquality_core.suite.staging`); the flows give
it the store folder.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalquality_core.canonical.digest import digest_bytes, digest_directory
from evalquality_core.suite.load import StagingError, stays_inside

__all__ = [
    "AUTO_LAYERS",
    "LayerHandle",
    "LayerStore",
    "confined",
    "layer_members",
    "layer_paths",
    "signature",
    "source_layer_members",
    "tree_members",
]

#: Folders of a system that are layers without being declared.
AUTO_LAYERS: tuple[str, ...] = ("node_modules",)
#: How many links one resolution may pass through (as the kernel's ELOOP bound).
_MAX_HOPS = 40
#: What a symlink's member digest hashes before its text, so a link and a file never digest alike.
_LINK_TAG = b"eval-quality/symlink/v1\x00"


def _refuse_link(path: Path, why: str = "") -> StagingError:
    return StagingError(f"{path}: a symlink{why}; a suite's system and fixtures must be plain files and folders")


def layer_paths(system: Path, settings: Mapping[str, Any], where: Path) -> list[str]:
    """The layers of ``system`` as '/' paths relative to it (see the module docstring); ``where`` is the
    ``suite.toml`` named in a refusal."""
    declared = settings.get("layers", [])
    if not isinstance(declared, list) or not all(isinstance(item, str) for item in declared):
        raise StagingError(f"{where}: layers must be a list of folder paths under system/")
    found: list[str] = []
    for raw in [*AUTO_LAYERS, *declared]:
        relative = posixpath.normpath(raw)
        if raw in AUTO_LAYERS and not (system / raw).is_dir():
            continue
        if not raw or relative in (".", "") or not stays_inside(raw):
            raise StagingError(f"{where}: layers entry {raw!r} must be a folder under system/ (not '.', absolute or '..')")
        path = system
        for part in relative.split("/"):
            path = path / part
            if path.is_symlink():
                raise _refuse_link(path, " (a layer or a folder above one)")
        if not path.is_dir():
            raise StagingError(f"{where}: layers entry {raw!r} is not a folder of the system")
        if relative not in found:
            found.append(relative)
    for one in found:
        for other in found:
            if one != other and other.startswith(one + "/"):
                raise StagingError(f"{where}: layer {other!r} lies inside layer {one!r}; list the outer one only")
    return found


def confined(link: Path, root: Path) -> bool:
    """Whether symlink ``link`` (somewhere under ``root``) resolves to a path inside ``root``.

    Resolved component by component from ``root``, as the kernel would, but never following anything
    outside it: an absolute link, a ``..`` above ``root``, a chain longer than 40 links, or any link met
    on the way that leaves ``root`` make it unconfined. Whether the final path exists does not matter.
    """
    relative = link.relative_to(root).as_posix().split("/")
    stack: list[str] = []
    pending = list(relative)
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                return False
            stack.pop()
            continue
        here = root.joinpath(*stack, part)
        if here.is_symlink():
            hops += 1
            if hops > _MAX_HOPS:
                return False
            text = os.readlink(here)
            if text.startswith("/"):
                return False
            pending = text.split("/") + pending  # relative to the link's folder: the stack as it is
            continue
        stack.append(part)
    return True


def tree_members(root: Path, prefix: str = "", *, links: bool = False) -> dict[str, str]:
    """Member digests of every file under ``root`` ('/' paths under ``prefix`` → digest), links not
    followed. A symlink is a member only with ``links`` (its digest hashes a tag and the link's text);
    without it a link is refused. Plain files digest exactly as ``tree_digest`` does."""
    members: dict[str, str] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in [*dirs, *files]:
            path = base / name
            key = posixpath.normpath(posixpath.join(prefix, path.relative_to(root).as_posix()))
            if path.is_symlink():
                if not links:
                    raise _refuse_link(path)
                members[key] = digest_bytes(_LINK_TAG + os.fsencode(os.readlink(path)))
            elif name in files and path.is_file():
                members[key] = digest_bytes(path.read_bytes())
    return members


def layer_members(layer: Path, prefix: str) -> dict[str, str]:
    """``tree_members`` of one layer, every link in it checked :func:`confined` to the layer first."""
    for folder, dirs, files in os.walk(layer, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            if path.is_symlink() and not confined(path, layer):
                raise _refuse_link(path, f" pointing outside its layer {prefix} ({os.readlink(path)!r})")
    return tree_members(layer, prefix, links=True)


Signature = dict[str, tuple[int, int, int, int, int]]

_SOURCES: dict[tuple[Path, str], tuple[Signature, dict[str, str]]] = {}
_SOURCES_GUARD = threading.Lock()


def source_layer_members(layer: Path, prefix: str) -> dict[str, str]:
    """:func:`layer_members` of a suite's layer, re-read only when its signature moved (each leg stages
    it, and re-digesting thousands of files per leg is the cost layers exist to save)."""
    key = (layer.absolute(), prefix)
    seen = signature(layer)
    with _SOURCES_GUARD:
        known = _SOURCES.get(key)
        if known is not None and known[0] == seen:
            return dict(known[1])
    members = layer_members(layer, prefix)
    if signature(layer) != seen:
        raise StagingError(f"{layer}: the layer changed while it was digested; stage again")
    with _SOURCES_GUARD:
        _SOURCES[key] = (seen, members)
    return dict(members)


def signature(root: Path) -> Signature:
    """Type/mode, inode, size, mtime and ctime (ns) of ``root`` and every entry under it, links not followed.

    Plain ``os`` strings, not ``Path`` objects: it runs twice per leg over thousands of entries."""
    seen: Signature = {}
    top = os.fspath(root)
    stat = os.lstat(top)
    seen["."] = (stat.st_mode, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    pending = [("", top)]
    while pending:
        relative, folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                stat = entry.stat(follow_symlinks=False)
                key = f"{relative}{entry.name}"
                seen[key] = (stat.st_mode, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
                if entry.is_dir(follow_symlinks=False):
                    pending.append((key + "/", entry.path))
    return seen


@dataclass(frozen=True)
class LayerHandle:
    """One generation of one layer in the store, as verified by this process."""

    relative: str  #: the layer's path under system/
    digest: str  #: the layer's content digest (its members under ``relative``)
    folder: Path  #: the generation's copy of the layer (what the workspace links to)
    members: Mapping[str, str]  #: its member digests, prefixed with ``relative``
    seal: Mapping[str, tuple[int, int, int, int, int]]  #: its signature when verified


class LayerStore:
    """The content-addressed layer store at ``root`` (``<home>/layers``): see the module docstring."""

    _guard = threading.Lock()
    _verified: dict[Path, LayerHandle] = {}  # shared by every store of this process: digest folder → handle

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _taint(self, generation: Path) -> None:
        """Take a changed generation out of use: rename it away (concurrent legs then find it gone) and remove it."""
        away = generation.with_name(f"tainted-{uuid.uuid4().hex[:12]}")
        try:
            generation.rename(away)
        except OSError:
            return  # already taken away by another leg
        shutil.rmtree(away, ignore_errors=True)

    def intact(self, handle: LayerHandle) -> bool:
        """Whether ``handle``'s generation is still exactly as verified (cheap: one lstat per entry)."""
        try:
            return signature(handle.folder) == handle.seal
        except OSError:
            return False

    def check(self, handle: LayerHandle) -> str | None:
        """After a leg: None when its layer is intact, else why (and the generation is tainted)."""
        if self.intact(handle):
            return None
        with self._guard:
            if self._verified.get(handle.folder.parent.parent) is handle:
                del self._verified[handle.folder.parent.parent]
        if handle.folder.exists():
            self._taint(handle.folder.parent)
        return f"layer {handle.relative} ({handle.digest}) changed while a leg used it; the layer is rebuilt"

    def _verify(self, generation: Path, relative: str, digest: str) -> LayerHandle | None:
        folder = generation / posixpath.basename(relative)
        try:
            before = signature(folder)
            members = layer_members(folder, relative)
            after = signature(folder)
        except (OSError, StagingError):
            return None
        if before != after or not members or digest_directory(members) != digest:
            return None
        return LayerHandle(relative, digest, folder, members, after)

    def acquire(self, source: Path, relative: str, digest: str) -> LayerHandle:
        """A verified generation of the layer ``source`` (system path ``relative``) whose content digest is
        ``digest``: this process's, checked again; else a stored one, re-digested; else a new copy."""
        home = self.root / digest.replace(":", "-")
        with self._guard:
            known = self._verified.get(home)
            if known is not None:
                if self.intact(known):
                    return known
                del self._verified[home]
                if known.folder.exists():
                    self._taint(known.folder.parent)
            home.mkdir(parents=True, exist_ok=True)
            for generation in sorted(home.glob("gen-*")):
                handle = self._verify(generation, relative, digest)
                if handle is not None:
                    self._verified[home] = handle
                    return handle
                self._taint(generation)
            building = home / f"building-{uuid.uuid4().hex[:12]}"
            try:
                shutil.copytree(source, building / posixpath.basename(relative), symlinks=True)
                generation = home / f"gen-{uuid.uuid4().hex[:12]}"
                building.rename(generation)
            finally:
                shutil.rmtree(building, ignore_errors=True)
            handle = self._verify(generation, relative, digest)
            if handle is None:
                self._taint(generation)
                raise StagingError(f"{source}: the layer changed while it was stored; stage again")
            self._verified[home] = handle
            return handle
