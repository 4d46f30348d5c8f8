"""A stand-in for einops (not installed here): ``rearrange``, ``reduce`` and ``repeat`` over torch
tensors for the patterns of named axes, parenthesised groups, unit axes (``1``) and ``...``."""

import math

import torch

__all__ = ["rearrange", "reduce", "repeat"]


def _parse(side):
    """'b (h w) c' -> [['b'], ['h', 'w'], ['c']]; '...' a group of its own; '1' a unit axis."""
    groups, current = [], None
    for token in side.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            current = []
        elif token == ")":
            groups.append(current)
            current = None
        elif current is not None:
            current.append(token)
        else:
            groups.append([token])
    return groups


def _expand(x, groups, sizes):
    """The tensor with every left-hand group split into its axes: (names, tensor)."""
    names, shape = [], []
    ellipsis = x.dim() - (len(groups) - 1) if ["..."] in groups else 0
    dims = iter(x.shape)
    for group in groups:
        if group == ["..."]:
            for i in range(ellipsis):
                names.append(f"...{i}")
                shape.append(next(dims))
            continue
        size = next(dims)
        known = [sizes.get(n, 1 if n == "1" else None) for n in group]
        if known.count(None) == 1:
            known[known.index(None)] = size // math.prod(k for k in known if k is not None)
        elif None in known:
            raise ValueError(f"einops stand-in: cannot split {size} into {group}")
        for name, k in zip(group, known):
            sizes.setdefault(name, k)
            names.append(name)
            shape.append(k)
    return names, x.reshape(shape), ellipsis


def _compose(x, names, groups, sizes, ellipsis):
    order, out = [], []
    for group in groups:
        if group == ["..."]:
            for i in range(ellipsis):
                order.append(f"...{i}")
                out.append(x.shape[names.index(f"...{i}")])
            continue
        size = 1
        for name in group:
            if name != "1":
                order.append(name)
                size *= sizes[name]
        out.append(size)
    x = x.permute([names.index(n) for n in order]) if order else x
    return x.reshape(out)


def rearrange(tensor, pattern, **sizes):
    left, right = (side.strip() for side in pattern.split("->"))
    names, x, ellipsis = _expand(torch.as_tensor(tensor), _parse(left), dict(sizes))
    keep = [i for i, n in enumerate(names) if n != "1"]
    x, names = x.reshape([x.shape[i] for i in keep]), [names[i] for i in keep]
    return _compose(x, names, _parse(right), {**sizes, **dict(zip(names, x.shape))}, ellipsis)


def reduce(tensor, pattern, reduction, **sizes):
    left, right = (side.strip() for side in pattern.split("->"))
    names, x, ellipsis = _expand(torch.as_tensor(tensor), _parse(left), dict(sizes))
    right_groups = _parse(right)
    kept = {n for g in right_groups for n in g} | ({f"...{i}" for i in range(ellipsis)} if ["..."] in right_groups else set())
    gone = [i for i, n in enumerate(names) if n not in kept]
    if gone:
        if callable(reduction):  # einops calls a callable with the tensor and the axes it reduces
            x = reduction(x, tuple(gone))
        else:
            x = getattr(torch, {"mean": "mean", "sum": "sum", "max": "amax", "min": "amin"}[reduction])(x, dim=gone)
        names = [n for i, n in enumerate(names) if i not in gone]
    return _compose(x, names, right_groups, {**sizes, **dict(zip(names, x.shape))}, ellipsis)


def repeat(tensor, pattern, **sizes):
    left, right = (side.strip() for side in pattern.split("->"))
    names, x, ellipsis = _expand(torch.as_tensor(tensor), _parse(left), dict(sizes))
    right_groups = _parse(right)
    flat = [n for g in right_groups for n in ([f"...{i}" for i in range(ellipsis)] if g == ["..."] else g) if n != "1"]
    for name in flat:
        if name not in names:
            x, names = x.unsqueeze(-1).expand(*x.shape, sizes[name]), names + [name]
    return _compose(x, names, right_groups, {**sizes, **dict(zip(names, x.shape))}, ellipsis)
