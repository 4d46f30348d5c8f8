"""A stand-in for attrs' classic API (not installed here): ``@attr.s`` / ``@attrs`` classes whose
``attr.ib()`` / ``attrib()`` fields (in the order written) get an ``__init__`` taking them by
position or keyword, with ``default=`` values, ``Factory(callable)`` defaults, defaults computed by
a method (``@field.default``, which may read the fields before it), and ``convert=`` /
``converter=`` applied to every value; ``evolve``, ``asdict``, ``fields`` and a ``__repr__`` and
``__eq__`` over the fields."""

_NOTHING = object()
__version__ = "19.3.0"


class Factory:
    def __init__(self, factory, takes_self=False):
        self.factory, self.takes_self = factory, takes_self


class _Attribute:
    _counter = 0

    def __init__(self, default=_NOTHING, convert=None, converter=None, validator=None, repr=True, **kwargs):
        _Attribute._counter += 1
        self.order = _Attribute._counter
        self.default_value = default
        self.converter = converter or convert
        self.name = None
        self.repr = repr

    def default(self, method):  # @field.default
        self.default_value = Factory(method, takes_self=True)
        return method

    def validator(self, method):  # @field.validator: not checked here
        return method


def attrib(default=_NOTHING, **kwargs):
    return _Attribute(default=default, **kwargs)


ib = attr = attrib


def _attributes(cls):
    return cls.__dict__.get("__attrs_attrs__", ())


def attrs(maybe_cls=None, **options):
    def wrap(cls):
        found = []
        for klass in reversed(cls.__mro__[1:]):
            found.extend(a for a in _attributes(klass) if all(a.name != f.name for f in found))
        own = sorted(((name, value) for name, value in cls.__dict__.items() if isinstance(value, _Attribute)),
                     key=lambda item: item[1].order)
        for name, value in own:
            value.name = name
            found = [a for a in found if a.name != name] + [value]
        cls.__attrs_attrs__ = tuple(found)
        for name, _ in own:
            delattr(cls, name)

        def __init__(self, *args, **kwargs):
            fields = cls.__attrs_attrs__
            if len(args) > len(fields):
                raise TypeError(f"__init__() takes {len(fields)} positional arguments, {len(args)} given")
            values = dict(zip((a.name for a in fields), args))
            for key in kwargs:
                if key in values or all(a.name != key for a in fields):
                    raise TypeError(f"__init__() got an unexpected keyword argument {key!r}")
            values.update(kwargs)
            for a in fields:
                if a.name in values:
                    value = values[a.name]
                elif isinstance(a.default_value, Factory):
                    f = a.default_value
                    value = f.factory(self) if f.takes_self else f.factory()
                elif a.default_value is not _NOTHING:
                    value = a.default_value
                else:
                    raise TypeError(f"__init__() missing required argument: {a.name!r}")
                if a.converter is not None:
                    value = a.converter(value)
                object.__setattr__(self, a.name, value)

        def __repr__(self):
            inner = ", ".join(f"{a.name}={getattr(self, a.name)!r}" for a in cls.__attrs_attrs__ if a.repr)
            return f"{cls.__name__}({inner})"

        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return all(getattr(self, a.name) == getattr(other, a.name) for a in cls.__attrs_attrs__)

        cls.__init__ = __init__
        cls.__repr__ = __repr__
        cls.__eq__ = __eq__
        cls.__hash__ = None
        return cls

    return wrap if maybe_cls is None else wrap(maybe_cls)


s = attributes = attrs


def fields(cls):
    return cls.__attrs_attrs__


def asdict(inst, recurse=True):
    result = {}
    for a in type(inst).__attrs_attrs__:
        value = getattr(inst, a.name)
        result[a.name] = asdict(value) if recurse and hasattr(type(value), "__attrs_attrs__") else value
    return result


def evolve(inst, **changes):
    cls = type(inst)
    for key in changes:
        if all(a.name != key for a in cls.__attrs_attrs__):
            raise TypeError(f"__init__() got an unexpected keyword argument {key!r}")
    values = {a.name: getattr(inst, a.name) for a in cls.__attrs_attrs__}
    values.update(changes)
    return cls(**values)
