import os
import sys

import numpy as np
import pytest

SOURCE_DIR = os.environ.get("TINYFORMER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture
def rng():
    return np.random.default_rng(20261127)
