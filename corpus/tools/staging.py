"""Moved: staging is product code, :mod:`evalquality_core.suite.staging` (this alias re-exports it)."""

from evalquality_core.suite.staging import *  # noqa: F403
from evalquality_core.suite.staging import __all__  # noqa: F401
