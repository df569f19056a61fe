import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Each test starts from seed 0 with no leftover Keras graph state."""
    keras.utils.set_random_seed(0)
    yield
    keras.backend.clear_session()
