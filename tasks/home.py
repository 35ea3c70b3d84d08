"""The eval-quality home (moved to :mod:`evalquality_core.suite.home`, so the CLI's staging finds the layer
store too); re-exported here for the tasks and flows that import it from this module."""

from __future__ import annotations

from evalquality_core.suite.home import PROJECT_ROOT, evalquality_home, layers_dir

__all__ = ["PROJECT_ROOT", "evalquality_home", "layers_dir"]
