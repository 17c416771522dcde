"""Loaded by pytest before tests/conftest.py, which removes every ETHOS_ variable so that a
developer's settings never reach a test: keeps the one that is not a setting, the Citus
cluster's URL (ETHOS_CITUS_URL), for tests/citus under another name."""

import os

if "ETHOS_CITUS_URL" in os.environ:
    os.environ["CITUS_TESTS_URL"] = os.environ["ETHOS_CITUS_URL"]
