"""A stand-in for barbar (not installed here): ``Bar(loader)`` yields the loader's items, printing
one progress line per item as the real bar redraws its own."""

import sys


class Bar:
    def __init__(self, iterable):
        self.iterable = iterable

    def __len__(self):
        return len(self.iterable)

    def __iter__(self):
        total = len(self.iterable) if hasattr(self.iterable, "__len__") else "?"
        for step, item in enumerate(self.iterable, 1):
            sys.stdout.write(f"{step}/{total}\n")
            yield item
