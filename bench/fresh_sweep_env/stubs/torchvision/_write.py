import os
import sys


def write(path, what):
    """Record a file write of the stubs (the probe counts it per process), then write it."""
    record = getattr(sys.modules.get("sitecustomize"), "record_write", None)
    if record is not None:
        record(os.fspath(path) if isinstance(path, (str, bytes, os.PathLike)) else repr(path), what)
    if isinstance(path, (str, bytes, os.PathLike)):
        with open(path, "wb") as f:
            f.write(b"stub " + what.encode())
