"""The generation cache (tasks/mutants.py ``cached_generation``): a re-run reads the generation instead of
running libcst again; an entry that was altered, cut short, or does not fit the sources is discarded
and the generation made again, never served. Real files, a real SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.canonical.json import canonical_bytes
from evalquality_core.mutants.generate import generate
from evalquality_core.suite.mutants import system_sources
from tasks.mutants import GENERATION_ENTRY_FORMAT, cached_generation, close_plan_store
from tests.mutants.store_rows import plant, rows

SOURCE = '''def fee(amount, vip):
    if amount > 100 and not vip:
        return amount * 2
    return amount - 1
'''
OPTIONS = {"operators": ["comparison", "boolean", "arithmetic"], "sample_size": None, "seed": 0, "per_line_limit": None}


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "shop"
    (suite / "system").mkdir(parents=True)
    (suite / "suite.toml").write_text('system-id = "shop"\n[fixtures]\nempty = "."\n')
    (suite / "contract.json").write_text("{}")  # what marks a suite folder; generation reads only system/
    (suite / "system" / "fee.py").write_text(SOURCE)
    return suite




def _same(a, b) -> bool:  # noqa: ANN001
    return a == b and [m.mutated_text for m in a.kept] == [m.mutated_text for m in b.kept]


def test_a_generation_is_read_back_and_tampered_or_truncated_entries_are_regenerated(tmp_path: Path) -> None:
    suite, cache = _suite(tmp_path), tmp_path / "cache"
    fresh = generate(system_sources(suite), operators=OPTIONS["operators"])
    assert len(fresh.kept) >= 4
    first, sources, how = cached_generation(suite, str(cache), **OPTIONS)
    assert how == "generated" and _same(first, fresh) and sources == {"system/fee.py": SOURCE}
    again, _, how = cached_generation(suite, str(cache), **OPTIONS)
    assert how == "cache" and _same(again, fresh)
    [(key, entry)] = rows(cache, "generations").items()
    # Altered: a mutant's replacement changed, the record digest left as written.
    plant(cache, "generations", key, entry.replace("amount * 2", "amount * 3"))
    altered, _, how = cached_generation(suite, str(cache), **OPTIONS)
    assert how == "regenerated" and _same(altered, fresh)
    assert rows(cache, "generations") == {key: entry}  # the good entry is back
    # Truncated.
    plant(cache, "generations", key, entry[: len(entry) // 2])
    cut, _, how = cached_generation(suite, str(cache), **OPTIONS)
    assert how == "regenerated" and _same(cut, fresh)
    # A consistent entry (digests recomputed) whose mutant does not fit the sources: its edit names
    # text the file does not hold. Verified against the sources, it is regenerated too.
    record = json.loads(entry)["record"]
    record["kept"][0]["find"] = "nowhere in the file\n"
    forged = canonical_bytes({"format": GENERATION_ENTRY_FORMAT, "key": key, "record": record,
                              "recordDigest": digest_artifact(record)}).decode("utf-8")
    plant(cache, "generations", key, forged)
    unfit, _, how = cached_generation(suite, str(cache), **OPTIONS)
    assert how == "regenerated" and _same(unfit, fresh)
    assert cached_generation(suite, str(cache), **OPTIONS)[2] == "cache"
    close_plan_store(str(cache))


def test_another_source_or_setting_is_another_entry_and_force_regenerates(tmp_path: Path) -> None:
    suite, cache = _suite(tmp_path), tmp_path / "cache"
    assert cached_generation(suite, str(cache), **OPTIONS)[2] == "generated"
    assert cached_generation(suite, str(cache), **{**OPTIONS, "seed": 1})[2] == "generated"
    (suite / "system" / "fee.py").write_text(SOURCE.replace("100", "200"))
    changed, _, how = cached_generation(suite, str(cache), **OPTIONS)
    assert how == "generated" and any("200" in m.original or "200" in m.find for m in changed.kept)
    assert cached_generation(suite, str(cache), **OPTIONS, force=True)[2] == "generated"
    assert len(rows(cache, "generations")) == 3
    close_plan_store(str(cache))
