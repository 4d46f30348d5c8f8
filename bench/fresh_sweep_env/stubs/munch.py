"""A stand-in for munch (not installed here): `Munch`, a dict whose keys are attributes too
(nested dicts stay plain dicts, as munch's own constructor leaves them; `munchify` converts them)."""


class Munch(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value

    def __delattr__(self, name):
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def copy(self):
        return type(self)(self)

    def toDict(self):
        return {key: value.toDict() if isinstance(value, Munch) else value for key, value in self.items()}


def munchify(value):
    if isinstance(value, dict):
        return Munch((key, munchify(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(munchify(item) for item in value)
    return value


def unmunchify(value):
    if isinstance(value, dict):
        return {key: unmunchify(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(unmunchify(item) for item in value)
    return value
