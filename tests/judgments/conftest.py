import pytest


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Every test makes six personas; the real PBKDF2 cost would dominate the suite's time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
