from . import inception_v3  # noqa: F401
