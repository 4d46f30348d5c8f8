"""What a call runs (`Facts.user_functions`) does not depend on which question is asked first.

The index of callers that types a parameter is built while questions are asked; an answer found
while it was only half built used to be kept (decision 0136). Each program is asked about every
call in source order, and again with each call asked first: every answer must be the same."""

from pathlib import Path

import pytest

from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import parse_module

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# a method of an attribute that holds a parameter, called while the callers are listed and after
ATTRIBUTE_OF_A_PARAMETER = """
class Scaled:
    def set_gain(self, gain):
        self.gain = gain


class Fitter:
    def __init__(self, net):
        self.model = net
        self.model.set_gain(0)

    def fit(self, epochs):
        for epoch in range(epochs):
            self.model.set_gain(epoch)


fitter = Fitter(Scaled())
fitter.fit(3)
"""

# no question meets itself again: the index's pass keeps its answers (decision 0163)
NO_CYCLE = """
class Net:
    def __init__(self):
        self.w = 1

    def step(self):
        return self.w


def make():
    return Net()


def train(epochs):
    net = make()
    for _ in range(epochs):
        net.step()
    return run(net)


def run(model):
    return model.step()


train(3)
"""

# a parameter typed by its callers (the index by name's pass), then the index by everything (a
# second pass, taking in what the first found: decision 0181)
PASSED_ON = NO_CYCLE + """

def fit(model):
    return model.step()


fit(Net())
"""

PROGRAMS = {
    "attribute_of_a_parameter": (ATTRIBUTE_OF_A_PARAMETER, {"self.model.set_gain(0)": ["set_gain"],
                                                            "self.model.set_gain(epoch)": ["set_gain"]}),
    "trainer_before_wrap": ((FIXTURES / "trainer_before_wrap" / "before.py").read_text(),
                            {"self.model.set_gain(1.0 + 0.1 * epoch)": ["set_gain"]}),
    "passed_on": (PASSED_ON, {"model.step()": ["step"], "fit(Net())": ["fit"], "run(net)": ["run"]}),
    "no_cycle": (NO_CYCLE, {"train(3)": ["train"], "make()": ["make"], "run(net)": ["run"], "Net()": ["__init__"]}),
}


def _answers(code: str, first: int | None) -> dict[str, list[str]]:
    """Every call's functions by name, `first` (an index into the calls) asked before the rest."""
    facts = Facts(parse_module(code))
    if first is not None:
        facts.user_functions(facts.calls[first])
    return {f"{i} {facts.code(c)}": [f.name.value for f in facts.user_functions(c)] for i, c in enumerate(facts.calls)}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_answers_do_not_depend_on_the_first_question(name):
    code, expected = PROGRAMS[name]
    in_order = _answers(code, None)
    by_code = {key.split(" ", 1)[1]: value for key, value in in_order.items()}
    assert {c: by_code[c] for c in expected} == expected
    for first in range(len(in_order)):
        assert _answers(code, first) == in_order, f"call {first} asked first"
