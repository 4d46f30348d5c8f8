"""A stand-in for easydict (not installed here): a dict whose keys are attributes too."""


class EasyDict(dict):
    def __init__(self, d=None, **kwargs):
        super().__init__()
        for key, value in dict(d or {}, **kwargs).items():
            self[key] = value

    def __setitem__(self, key, value):
        if isinstance(value, dict) and not isinstance(value, EasyDict):
            value = EasyDict(value)
        super().__setitem__(key, value)

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value
