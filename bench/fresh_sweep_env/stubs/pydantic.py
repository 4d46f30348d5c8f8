"""A stand-in for pydantic (not installed here): `BaseModel` takes its fields as keyword arguments
(a field left out takes the class's default; one without a default is required) and keeps them as
plain attributes, without validation; `ConfigDict` is a dict; `Field` gives its default."""


def ConfigDict(**kwargs):
    return dict(kwargs)


def Field(default=None, **kwargs):
    return default


class BaseModel:
    model_config: dict = {}

    def __init__(self, **data):
        fields = {}
        for klass in reversed(type(self).__mro__):
            fields.update(getattr(klass, "__annotations__", {}))
        fields.pop("model_config", None)
        for name in fields:
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
