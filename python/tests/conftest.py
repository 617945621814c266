# Runs against the package that PYTHONPATH names (ctest: <build>/python).
import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("FPLAB_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture
def source_dir():
    return SOURCE_DIR
