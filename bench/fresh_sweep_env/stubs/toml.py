"""A stand-in for toml (not installed here): load and loads over the standard library's tomllib."""

import tomllib


def loads(text):
    return tomllib.loads(text)


def load(f):
    if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__"):
        with open(f, encoding="utf-8") as handle:
            return loads(handle.read())
    data = f.read()
    return loads(data.decode() if isinstance(data, bytes) else data)
