"""A stand-in for pydantic (not installed here): `BaseModel` takes its fields as keyword arguments
(a field left out takes the class's default; one without a default is required) and keeps them as
plain attributes, without validation; `ConfigDict` is a dict; `Field` gives its default. pydantic 1's
names too: `__fields__` (the field names), `dict()` (as `model_dump()`), and validator decorators
(`root_validator`, `validator`, bare or called) that leave the function as it is (nothing validated)."""


def ConfigDict(**kwargs):
    return dict(kwargs)


def Field(default=None, **kwargs):
    return default


def _keep(*args, **kwargs):
    """`@root_validator` or `@root_validator(pre=True)`, `@validator("x")`: the function unchanged."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda function: function


root_validator = validator = field_validator = model_validator = _keep


class BaseModel:
    model_config: dict = {}
    __fields__: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fields: dict = {}
        for klass in reversed(cls.__mro__):
            fields.update(getattr(klass, "__annotations__", {}))
        for name in ("model_config", "__fields__"):
            fields.pop(name, None)
        cls.__fields__ = fields

    def __init__(self, **data):
        for name in type(self).__fields__:
            if name in data:
                value = data.pop(name)
            elif hasattr(type(self), name):
                value = getattr(type(self), name)
            else:
                raise TypeError(f"{type(self).__name__}: field {name!r} required")
            object.__setattr__(self, name, value)
        for name, value in data.items():
            object.__setattr__(self, name, value)

    def model_dump(self):
        return dict(vars(self))

    dict = model_dump
