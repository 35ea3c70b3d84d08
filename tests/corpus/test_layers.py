"""Read-only dependency layers (evalquality_core/suite/layers.py): a system's ``node_modules/`` (or a
folder ``suite.toml`` lists in ``layers``) is stored once per content digest and linked into each staged
workspace. Targets are hostile: each attack here is a real child process run in a staged workspace, as
a leg's target would be, and what it does to the shared layer must be seen by every leg that used it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.suite.layers import LayerStore
from evalquality_core.suite.load import load_mutations
from evalquality_core.suite.staging import StagingError, check_layers, stage_workspace, staged_digests
from tests.corpus.conftest import SUITES

ORIGINAL = "module.exports = 'original';\n"


def layered_suite(root: Path, *, declared: str | None = None) -> Path:
    """The notes suite with a ``system/node_modules`` holding a package, its npm ``.bin`` link, and (with
    ``declared``) one more layer folder listed in ``suite.toml``."""
    suite = root / "notes"
    shutil.copytree(SUITES / "notes", suite, ignore=shutil.ignore_patterns("trials"))
    package = suite / "system" / "node_modules" / "dep"
    (package / "bin").mkdir(parents=True)
    (package / "index.js").write_text(ORIGINAL)
    (package / "bin" / "tool.py").write_text("print('tool from the layer')\n")
    (suite / "system" / "node_modules" / ".bin").mkdir()
    (suite / "system" / "node_modules" / ".bin" / "tool").symlink_to("../dep/bin/tool.py")
    if declared is not None:
        (suite / "system" / declared).mkdir(parents=True)
        (suite / "system" / declared / "data.txt").write_text("vendored\n")
        settings = suite / "suite.toml"
        settings.write_text(f'layers = ["{declared}"]\n' + settings.read_text())
    return suite


def run_target(workspace: Path, code: str) -> subprocess.CompletedProcess[str]:
    """A real target process, working in the workspace's ``work/`` as a leg's target does."""
    return subprocess.run([sys.executable, "-c", code], cwd=workspace / "work", capture_output=True, text=True,
                          timeout=60, check=True)


APPEND = "open('../system/node_modules/dep/index.js', 'a').write('tampered\\n')"


def test_a_layer_is_linked_not_copied_and_digests_as_the_copy_does(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites", declared="vendor/lib")
    store = LayerStore(tmp_path / "home" / "layers")
    linked = stage_workspace(suite, tmp_path / "linked", layers=store)
    copied = stage_workspace(suite, tmp_path / "copied")
    assert (linked.system_dir / "node_modules").is_symlink() and (linked.system_dir / "vendor" / "lib").is_symlink()
    assert not (copied.system_dir / "node_modules").is_symlink()
    # The leg key's digest is the content's: linked, copied and planned without staging all agree...
    assert linked.system_digest == copied.system_digest == staged_digests(suite, [None])[None][0]
    # ...and a byte of the layer moves it (the layer is part of what a leg's key names).
    (suite / "system" / "node_modules" / "dep" / "index.js").write_text(ORIGINAL + "// changed\n")
    assert staged_digests(suite, [None])[None][0] != linked.system_digest
    # Staged once: a second leg links the same generation.
    again = stage_workspace(suite, tmp_path / "again", layers=store)
    assert again.layers[0].folder != linked.layers[0].folder  # new content, new entry
    third = stage_workspace(suite, tmp_path / "third", layers=store)
    assert third.layers[0].folder == again.layers[0].folder


def test_an_npm_bin_link_inside_the_layer_is_kept_and_runs(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    for store in (LayerStore(tmp_path / "home" / "layers"), None):
        staged = stage_workspace(suite, tmp_path / f"ws-{store is None}", layers=store)
        link = staged.system_dir / "node_modules" / ".bin" / "tool"
        assert link.is_symlink() and os.readlink(link) == "../dep/bin/tool.py"
        assert run_target(staged.root, "import runpy; runpy.run_path('../system/node_modules/.bin/tool')").stdout == (
            "tool from the layer\n"
        )


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("absolute", "/etc/passwd"),
        ("above-the-system", "../../../suite.toml"),
        ("into-the-system-beside-the-layer", "../../notes.py"),
        # lexically inside (node_modules/.bin/../pkg/up/../../x = node_modules/x), but pkg/up is a link to
        # node_modules itself, so the kernel resolves it to system/../x: outside
        ("through-a-link-then-up", "../pkg/up/../../outside.txt"),
    ],
)
def test_a_link_in_a_layer_leaving_it_is_refused_on_one_line(tmp_path: Path, name: str, text: str) -> None:
    suite = layered_suite(tmp_path / "suites")
    modules = suite / "system" / "node_modules"
    (modules / "pkg").mkdir()
    (modules / "pkg" / "up").symlink_to("..")  # confined on its own: node_modules itself
    (modules / ".bin" / name).symlink_to(text)
    for attempt in (
        lambda: stage_workspace(suite, tmp_path / "ws", layers=LayerStore(tmp_path / "layers")),
        lambda: staged_digests(suite, [None]),
    ):
        with pytest.raises(StagingError) as refused:
            attempt()
        message = str(refused.value)
        assert "\n" not in message
        assert message.startswith(f"{modules / '.bin' / name}: a symlink pointing outside its layer node_modules")
    assert not (tmp_path / "layers").exists() or not list((tmp_path / "layers").rglob("outside.txt"))


def test_a_link_outside_any_layer_is_still_refused(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    (suite / "system" / "helper.py").symlink_to("notes.py")
    with pytest.raises(StagingError, match=r"helper.py: a symlink; a suite's system"):
        stage_workspace(suite, tmp_path / "ws", layers=LayerStore(tmp_path / "layers"))


def test_a_target_appending_to_its_layer_faults_itself_and_a_concurrent_leg_and_the_layer_is_rebuilt(
    tmp_path: Path,
) -> None:
    suite = layered_suite(tmp_path / "suites")
    store = LayerStore(tmp_path / "home" / "layers")
    hostile = stage_workspace(suite, tmp_path / "hostile", layers=store)
    concurrent = stage_workspace(suite, tmp_path / "concurrent", layers=store)
    assert hostile.layers[0].folder == concurrent.layers[0].folder  # one generation, shared
    run_target(hostile.root, APPEND)
    # The concurrent leg ends first: it saw the tampered file, so it is a fault too.
    assert [line.startswith("layer node_modules (sha256:") for line in check_layers(concurrent)] == [True]
    assert len(check_layers(hostile)) == 1
    # The next leg gets a fresh generation holding the layer as the suite holds it.
    later = stage_workspace(suite, tmp_path / "later", layers=store)
    assert later.layers[0].folder != hostile.layers[0].folder
    assert (later.system_dir / "node_modules" / "dep" / "index.js").read_text() == ORIGINAL
    assert check_layers(later) == []
    assert not hostile.layers[0].folder.exists()


def test_a_write_restored_before_the_leg_ends_is_still_seen(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    staged = stage_workspace(suite, tmp_path / "ws", layers=store_of(tmp_path))
    # Write, read back by a concurrent leg in the meantime, then restore bytes, size and mtime.
    run_target(staged.root, (
        "import os; p = '../system/node_modules/dep/index.js'; s = os.stat(p); b = open(p).read();"
        "open(p, 'w').write(b.upper()); open(p, 'w').write(b); os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns))"
    ))
    assert (staged.system_dir / "node_modules" / "dep" / "index.js").read_text() == ORIGINAL
    assert len(check_layers(staged)) == 1


def test_a_planted_file_or_a_chmod_in_the_layer_is_seen(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    for number, code in enumerate((
        "open('../system/node_modules/dep/planted.js', 'w').write('x')",
        "import os; os.chmod('../system/node_modules/dep/index.js', 0o777)",
    )):
        staged = stage_workspace(suite, tmp_path / f"ws-{number}", layers=store_of(tmp_path))
        run_target(staged.root, code)
        assert len(check_layers(staged)) == 1, code


def test_a_write_after_the_leg_was_checked_is_seen_before_the_layer_is_reused(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    store = store_of(tmp_path)
    first = stage_workspace(suite, tmp_path / "first", layers=store)
    assert check_layers(first) == []
    # A process the leg left behind (or anyone) writes into the stored generation between legs.
    run_target(first.root, APPEND)
    second = stage_workspace(suite, tmp_path / "second", layers=store)
    assert second.layers[0].folder != first.layers[0].folder
    assert (second.system_dir / "node_modules" / "dep" / "index.js").read_text() == ORIGINAL


def test_a_stored_generation_changed_by_another_process_is_re_digested_before_use(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    first = stage_workspace(suite, tmp_path / "first", layers=store_of(tmp_path))
    stored = first.layers[0].folder / "dep" / "index.js"
    # Another process (a second run) finds the generation on disk: it must re-read it, not trust it.
    LayerStore._verified.clear()
    subprocess.run([sys.executable, "-c", f"open({str(stored)!r}, 'w').write({ORIGINAL.upper()!r})"], check=True)
    second = stage_workspace(suite, tmp_path / "second", layers=store_of(tmp_path))
    assert (second.system_dir / "node_modules" / "dep" / "index.js").read_text() == ORIGINAL


def test_a_mutation_of_a_file_in_a_layer_gets_its_own_layer_and_never_touches_the_shared_one(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    base = load_mutations(suite)["P-001"]
    inside = type(base)(**{**base.__dict__, "target": "system/node_modules/dep/index.js",
                           "find": "'original'", "replace": "'mutated'"})
    store = store_of(tmp_path)
    clean = stage_workspace(suite, tmp_path / "clean", layers=store)
    mutated = stage_workspace(suite, tmp_path / "mutated", inside, layers=store)
    again = stage_workspace(suite, tmp_path / "again", inside, layers=store)
    # The mutant's layer is a stored layer of its own (its own digest), shared by the mutant's legs...
    assert mutated.layers[0].digest != clean.layers[0].digest
    assert mutated.layers[0].folder == again.layers[0].folder != clean.layers[0].folder
    assert (mutated.system_dir / "node_modules" / "dep" / "index.js").read_text() == "module.exports = 'mutated';\n"
    # ...and the clean layer, the suite's own file and a later clean leg are untouched.
    assert (clean.system_dir / "node_modules" / "dep" / "index.js").read_text() == ORIGINAL
    assert (suite / "system" / "node_modules" / "dep" / "index.js").read_text() == ORIGINAL
    assert check_layers(clean) == [] and check_layers(mutated) == []
    later = stage_workspace(suite, tmp_path / "later", layers=store)
    assert later.layers[0].folder == clean.layers[0].folder
    # The digest is the content's: linked, copied and planned without staging agree; not the clean one.
    copied = stage_workspace(suite, tmp_path / "copied", inside)
    assert (copied.system_dir / "node_modules" / "dep" / "index.js").read_text() == "module.exports = 'mutated';\n"
    assert mutated.system_digest == copied.system_digest == staged_digests(suite, [inside])[inside.mutation_id][0]
    assert mutated.system_digest != clean.system_digest


def test_a_mutation_through_a_link_in_a_layer_is_refused_on_one_line(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    base = load_mutations(suite)["P-001"]
    through = type(base)(**{**base.__dict__, "target": "system/node_modules/.bin/tool", "find": "tool", "replace": "x"})
    with pytest.raises(StagingError, match=r"target system/node_modules/\.bin/tool passes through a symlink") as refused:
        stage_workspace(suite, tmp_path / "ws", through, layers=store_of(tmp_path))
    assert "\n" not in str(refused.value)
    with pytest.raises(StagingError, match="passes through a symlink"):
        staged_digests(suite, [through])


def store_of(tmp_path: Path) -> LayerStore:
    return LayerStore(tmp_path / "home" / "layers")
