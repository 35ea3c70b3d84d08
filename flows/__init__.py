"""The Prefect flows (``python -m flows.preflight``, ``flows.contract_strength``).

Importing the package fixes the environment Prefect reads at import time (``PREFECT_HOME`` under the
eval-quality home, quiet logging), before any flow module imports Prefect; see ``flows/settings.py``.
"""

from flows.settings import configure_environment

configure_environment()
