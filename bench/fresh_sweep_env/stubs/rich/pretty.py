"""rich.pretty's Pretty: an object shown as its pprint text."""

import pprint


class Pretty:
    def __init__(self, obj, **kwargs):
        self.obj = obj

    def __str__(self):
        return pprint.pformat(self.obj)
