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
* **A mutation inside a layer** (``mutations/`` or a generated mutant whose target lies in a layer) never
  touches the shared copy: the mutated layer has its own content digest, so it is stored as a layer of its
  own (``acquire(..., edit=...)``: the layer copied once, the one file replaced) and shared by every leg
  of that mutant.
* **In use, and pruning.** A process that stages from a digest folder holds a shared ``flock`` on its
  ``.lock`` file until it exits (released by the kernel even on ``kill -9``) and touches that file's
  mtime on every use. :func:`prune` removes a digest folder only when its last use is older than the
  cut-off AND it can take that lock exclusively (no living process has staged from it); it renames the
  folder to ``.pruning-<id>`` first (atomic), so a crash mid-prune leaves a name no run ever reads, and
  the next prune removes it. A process that locked a folder in the instant it was renamed away sees the
  path no longer holds its lock file and starts over with a fresh folder.

This module touches files (it is an adapter beside :mod:`evalquality_core.suite.staging`); the flows give
it the store folder.
"""

from __future__ import annotations

import fcntl
import os
import posixpath
import shutil
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalquality_core.canonical.digest import digest_bytes, digest_directory
from evalquality_core.suite.home import layers_dir
from evalquality_core.suite.load import StagingError, stays_inside

__all__ = [
    "AUTO_LAYERS",
    "LOCK_FILE",
    "LayerHandle",
    "LayerStore",
    "PruneReport",
    "confined",
    "default_store",
    "layer_members",
    "layer_paths",
    "prune",
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
#: The in-use lock (and last-use stamp, its mtime) of one digest folder of the store.
LOCK_FILE = ".lock"
#: Where a digest folder goes while it is pruned: a name no run ever looks up.
_PRUNING = ".pruning-"


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
    _pins: dict[Path, int] = {}  # digest folder → the fd holding its shared in-use lock (until exit)

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

    def _pin(self, home: Path) -> None:
        """Hold a shared in-use lock on ``home`` for this process's life and stamp its last use (called
        under ``_guard``). A folder pruned between the open and the lock is made afresh."""
        lock = home / LOCK_FILE
        while True:
            known = self._pins.get(home)
            if known is not None:
                try:
                    if os.stat(lock).st_ino == os.fstat(known).st_ino:
                        os.utime(lock)
                        return
                except OSError:
                    pass
                os.close(known)  # pruned while we held it?  Cannot be (prune needs it exclusively); be safe.
                del self._pins[home]
            home.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except FileNotFoundError:
                continue  # renamed away by a prune in between: make it again
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits while a prune holds it exclusively
            try:
                same = os.stat(lock).st_ino == os.fstat(fd).st_ino
            except OSError:
                same = False
            if same:
                self._pins[home] = fd
                os.utime(lock)
                return
            os.close(fd)  # the folder was pruned while we waited: start over

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

    def acquire(self, source: Path, relative: str, digest: str, edit: tuple[str, bytes] | None = None) -> LayerHandle:
        """A verified generation of the layer ``source`` (system path ``relative``) whose content digest is
        ``digest``: this process's, checked again; else a stored one, re-digested; else a new copy.

        ``edit`` (a '/' path inside the layer, its new bytes): the layer as a mutation leaves it; ``digest``
        is then the mutated layer's, so it is stored apart from the clean one (which is never written)."""
        home = self.root / digest.replace(":", "-")
        with self._guard:
            self._pin(home)
            known = self._verified.get(home)
            if known is not None:
                if self.intact(known):
                    return known
                del self._verified[home]
                if known.folder.exists():
                    self._taint(known.folder.parent)
            for generation in sorted(home.glob("gen-*")):
                handle = self._verify(generation, relative, digest)
                if handle is not None:
                    self._verified[home] = handle
                    return handle
                self._taint(generation)
            building = home / f"building-{uuid.uuid4().hex[:12]}"
            try:
                copy = building / posixpath.basename(relative)
                shutil.copytree(source, copy, symlinks=True)
                if edit is not None:
                    target = copy.joinpath(*edit[0].split("/"))
                    if target.is_symlink() or not target.is_file():
                        raise StagingError(f"{source / edit[0]}: a mutation's target must be a plain file of the layer")
                    target.write_bytes(edit[1])
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


def default_store() -> LayerStore:
    """The store of the eval-quality home (``<home>/layers``, evalquality_core/suite/home.py): what every
    staging path of the CLI and the flows links layers from."""
    return LayerStore(layers_dir())


@dataclass(frozen=True)
class PruneReport:
    """What :func:`prune` did: digest folders removed (and their bytes), kept because a living process
    holds them, kept because used within the cut-off; crash leftovers removed."""

    removed: tuple[str, ...]
    freed_bytes: int
    in_use: tuple[str, ...]
    recent: tuple[str, ...]
    leftovers: int

    def line(self, days: float) -> str:
        """The one summary line ``eval-quality layers prune`` prints."""
        return (f"removed {len(self.removed)} layer(s) unused for {days:g} day(s) ({self.freed_bytes / 1e6:.1f} MB); "
                f"kept {len(self.in_use)} in use and {len(self.recent)} used more recently"
                + (f"; cleared {self.leftovers} leftover(s) of an interrupted prune" if self.leftovers else ""))


def _size(folder: Path) -> int:
    total = 0
    for base, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(base, name)).st_size
            except OSError:
                pass
    return total


def prune(root: Path, older_than_s: float, *, now: float | None = None) -> PruneReport:
    """Remove the digest folders of the store at ``root`` last used more than ``older_than_s`` seconds
    ago and held by no living process (module docstring: **In use, and pruning**). A missing store is
    empty. The last use is the lock file's mtime (the folder's when it has none: an older store)."""
    root = Path(root)
    now = time.time() if now is None else now
    removed: list[str] = []
    in_use: list[str] = []
    recent: list[str] = []
    freed = leftovers = 0
    if not root.is_dir():
        return PruneReport((), 0, (), (), 0)
    for child in sorted(root.iterdir()):
        if child.name.startswith(_PRUNING):  # a crash mid-prune: never read by a run, finish it
            shutil.rmtree(child, ignore_errors=True)
            leftovers += 1
            continue
        if child.is_symlink() or not child.is_dir():
            continue
        lock = child / LOCK_FILE
        try:
            last = (lock if lock.exists() else child).stat().st_mtime
        except OSError:
            continue
        if now - last <= older_than_s:
            recent.append(child.name)
            continue
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                in_use.append(child.name)
                continue
            away = root / f"{_PRUNING}{uuid.uuid4().hex[:12]}"
            child.rename(away)  # atomic: from here no run finds it under its digest
        finally:
            os.close(fd)
        size = _size(away)
        shutil.rmtree(away, ignore_errors=True)
        removed.append(child.name)
        freed += size
    return PruneReport(tuple(removed), freed, tuple(in_use), tuple(recent), leftovers)
