"""rich.filesize's `pick_unit_and_suffix`: the largest unit not above the size, and its suffix."""


def pick_unit_and_suffix(size, suffixes, base):
    unit, suffix = 1, suffixes[0]
    for i, candidate in enumerate(suffixes):
        unit, suffix = base ** i, candidate
        if size < unit * base:
            break
    return unit, suffix
