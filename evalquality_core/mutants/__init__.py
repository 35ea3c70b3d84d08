"""Generated mutants (issue 18): machine-made defects of a suite's system, in the suite's mutation shape.

One module per concept, all pure (no file, process, clock or random source; the suite adapter
``evalquality_core/suite/mutants.py`` reads and writes the files and runs the legs):

* :mod:`.catalogue` — the operator table: each operator's name, ``mutatorName`` and what it does (no libcst);
* :mod:`.operators` — the operators (libcst): where a source file can be mutated, and how;
* :mod:`.edits`     — a mutated file as a ``find``/``replace`` pair, ``find`` widened until it occurs once;
* :mod:`.filter`    — the static filter: Invalid (does not compile, changes nothing) and Duplicate;
* :mod:`.select`    — ``--per-line`` and the seeded ``--sample`` (a digest order, reproducible anywhere);
* :mod:`.generate`  — the whole generation of one system: candidates → filter → selection → records;
* :mod:`.classify`  — clean vs mutated observations → NoCoverage / Stillborn / Timeout / Unobservable /
  ArtifactOnly / Observable, and the difference vector observable mutants collapse on;
* :mod:`.score`     — the oracle kill score with its 95 % Wilson interval;
* :mod:`.report`    — the mutation-testing-report-schema document (a pydantic model of its shape).
"""
