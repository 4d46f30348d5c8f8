"""Draws from the global random generators: which a value's construction runs, and which seed
call decides them.

A seed (`torch.manual_seed(s)`) fixes the stream of its own family's global generator only:
`torch.randperm(n)` reads torch's, `np.random.permutation(n)` numpy's, `random.shuffle(xs)`
Python's. A draw handed its own generator (`torch.randperm(n, generator=g)`,
`random_split(ds, sizes, generator=g)`) or made of a generator object
(`np.random.default_rng(0).permutation(n)`, `random.Random(0).shuffle(xs)`) reads no global stream.
"""

from __future__ import annotations

import libcst as cst

from ddpify.analysis.objects import of
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts

# the seed calls of each family's global generator
SEED_FAMILIES = {"torch.manual_seed": "torch", "torch.random.manual_seed": "torch", "numpy.random.seed": "numpy",
                 "random.seed": "random"}
# the draws that pick which samples, or which order, a data set holds
ORDER_DRAWS = {"torch.randperm": "torch", "torch.utils.data.random_split": "torch", "numpy.random.permutation": "numpy",
               "numpy.random.shuffle": "numpy", "numpy.random.choice": "numpy", "random.shuffle": "random",
               "random.sample": "random"}


def order_draws(facts: Facts, site: cst.CSTNode, seed: cst.Call, family: str, depth: int = 2) -> list[cst.Call]:
    """The draws of `family`'s global generator that pick a data set's samples or their order
    and that building the value `site` runs: `site` itself (`random_split(data, [n, m])`), or a
    call within it that builds a class of the program (`ConcatDataset([JetDataset(d) for d in
    parts])`), whose `__init__` draws (`self.perm = torch.randperm(len(data))`), directly or in
    the program's functions it calls (`depth` calls deep), from the stream `seed` (a seed call of
    `family`) set; not one handed a generator, nor one whose function seeds the family anew
    between (`torch.manual_seed(0)` in the `__init__`)."""
    flow = of(facts)
    found: list[cst.Call] = []
    for call in facts.calls_in(site):
        if _draws(facts, call, seed, family):
            found.append(call)
            continue
        for cls in flow.classes_built(call):
            for init in facts.method(cls, "__init__"):
                found += _drawn_in(facts, init, seed, family, depth)
    return list(dict.fromkeys(found))


def _draws(facts: Facts, call: cst.Call, seed: cst.Call, family: str) -> bool:
    return ORDER_DRAWS.get(facts.qualify(call.func) or "") == family and mt.keyword(call, "generator") is None \
        and not _seeded_anew(facts, call, seed, family)


def _seeded_anew(facts: Facts, call: cst.Call, seed: cst.Call, family: str) -> bool:
    """Does the function of `call` seed `family` before it, after `seed` where `seed` is there too?"""
    func = facts.scope(call)
    return any(SEED_FAMILIES.get(facts.qualify(c.func) or "") == family and c is not seed and facts.before(c, call)
               and (facts.scope(seed) is not func or facts.before(seed, c))
               for c in facts.calls_in(func) if facts.scope(c) is func)


def _drawn_in(facts: Facts, func: cst.CSTNode, seed: cst.Call, family: str, depth: int) -> list[cst.Call]:
    found = []
    for call in facts.calls_in(func):
        if _draws(facts, call, seed, family):
            found.append(call)
        elif depth > 0:
            for callee in facts.user_functions(call):
                if callee is not func:
                    found += _drawn_in(facts, callee, seed, family, depth - 1)
    return found
