"""A stand-in for rich (not installed here): `rich.progress` tracks an iterable by yielding its items; `rich.console` and `rich.pretty` print plainly."""
