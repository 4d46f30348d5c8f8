"""rich.console's Console as a plain printer: `print` writes each object's str() to its file (stdout by default)."""

import sys


class Console:
    def __init__(self, file=None, **kwargs):
        self.file = file

    def print(self, *objects, sep=" ", end="\n", **kwargs):
        print(*objects, sep=sep, end=end, file=self.file or sys.stdout)

    log = print

    def rule(self, title="", **kwargs):
        self.print(title)
