"""The answers the analyses ask again and again are found once per program (decision 0027, round 7):
where a name lives (`Facts.ref`), what it may hold (`Facts.sources`), and whether a name holds
the wrapper of a program's one model (`models.holds_wrapper`, one memo for `refs`)."""

from __future__ import annotations

from collections import Counter

from ddpify.analysis import models
from ddpify.analysis.result import analyse
from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import parse_module
from tests.support.env import FIXTURES


def _analysed(monkeypatch) -> tuple:
    found: Counter = Counter()
    for name in ("_ref", "_find_sources"):
        original = getattr(Facts, name)

        def counted(self, *args, _original=original, _name=name):
            found[(_name, *map(id, args))] += 1
            return _original(self, *args)
        monkeypatch.setattr(Facts, name, counted)
    return analyse(parse_module((FIXTURES / "mnist_style" / "before.py").read_bytes())), found


def test_each_name_is_placed_and_followed_once(monkeypatch):
    """The analyses of one script ask where a name lives and what it holds thousands of times
    (the corpus: 12,655 and 3,196), for a third and a quarter as many names: each is found once."""
    analysis, found = _analysed(monkeypatch)
    assert found and max(found.values()) == 1
    name = next(iter(analysis.facts.names))
    assert analysis.facts.ref(name) is analysis.facts.ref(name)


def test_a_programs_one_model_is_asked_about_with_one_memo(monkeypatch):
    """`_trained_by_methods` asked `holds_wrapper` with a new dict of its model's names, so with a
    fresh memo; for a program's only model that dict is `refs`, whose answers are kept already."""
    analysis, _ = _analysed(monkeypatch)
    assert len(analysis.models.wrapped) == 1
    assert len(analysis.facts.__dict__["_holds_answers"]) == 1


# one unit: a model class with a method of its own, trained in a function of its own, then a call of
# that method (the calls `_trained_by_methods` asks about) and a save (`_unwraps`, `holds_wrapper`)
UNIT = """
class Net{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)

    def score(self, x):
        return self.fc(x).sum()


def unwrap{i}(m):
    return m.module if hasattr(m, "module") else m


def main{i}(data):
    model = Net{i}()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in DataLoader(data, batch_size=2):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(model.score(x))
    torch.save(unwrap{i}(model).state_dict(), "m{i}.pt")
"""
HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nfrom torch.utils.data import DataLoader\n"


def _questions(monkeypatch, units: int, name: str) -> Counter:
    """`models.<name>`'s calls, by argument ids, analysing `units` copies of `UNIT`."""
    found: Counter = Counter()
    original = getattr(models, name)

    def counted(*args):
        found[tuple(map(id, args[1:]))] += 1
        return original(*args)
    monkeypatch.setattr(models, name, counted)
    analyse(parse_module(HEAD + "".join(UNIT.format(i=i) for i in range(units))))
    monkeypatch.setattr(models, name, original)
    return found


def test_what_names_hold_is_asked_linearly_in_the_models(monkeypatch):
    """`_trained_by_methods` asks, for each model, whether each call on any model holds it: each
    model's questions about another's calls were answered model by model (2, 4, 8 units: 80, 200,
    560 answers, quadratic); where a question reads none of the model's names (`_asked`), it is not
    asked (linear)."""
    four, eight = (sum(_questions(monkeypatch, n, "_holds_uncached").values()) for n in (4, 8))
    assert four and eight <= 2 * four


def test_a_helper_is_read_for_an_unwrap_once(monkeypatch):
    """`_unwraps` (is this function the program's unwrap helper) is asked for each call of it that
    a question follows, by every model's questions: it reads the function once."""
    found = _questions(monkeypatch, 4, "_takes_module")
    assert found and max(found.values()) == 1


def test_whether_a_copy_is_a_wrapper_is_read_once_per_refs():
    """`_copies_wrap` (is a copy of a wrapper a wrapper: the program wrote its wraps) is asked in two
    of `holds_wrapper`'s questions, each answered for every name followed: it reads the models of
    `refs` once."""
    class Counted(dict):
        reads = 0

        def values(self):
            Counted.reads += 1
            return super().values()
    analysis = analyse(parse_module(HEAD + UNIT.format(i=0)))
    refs = Counted(analysis.models.refs)
    assert [models._copies_wrap(analysis.facts, refs) for _ in range(3)] == [False] * 3
    assert Counted.reads == 1


def test_what_a_helper_runs_is_walked_once_however_many_calls_run_it(monkeypatch):
    """`writes.preparing` asks of every call of the program what the functions it runs run, three
    calls down (a data set's preparation writes its files on one process): a helper called from
    eight places was walked eight times; it is walked once."""
    from ddpify.analysis import writes
    found: Counter = Counter()
    original = Facts.calls_of

    def counted(self, func):
        found[id(func)] += 1
        return original(self, func)
    monkeypatch.setattr(Facts, "calls_of", counted)
    source = HEAD + "def save(obj, path):\n    torch.save(obj, path)\n\n\n" + "".join(
        f"def step{i}(model):\n    save(model.state_dict(), 'm{i}.pt')\n\n\n" for i in range(8))
    facts = Facts(parse_module(source))
    writes.preparing(facts)
    assert found and max(found.values()) == 1


def test_a_name_no_comprehension_binds_is_not_walked_up(monkeypatch):
    """`Objects.values` asks of every name whether a comprehension around it binds it (`m` of `[m.to(d)
    for m in models]`), walking up its ancestors (large scripts: 2,506 walks); a name that no
    comprehension of the program binds is answered without a walk."""
    from ddpify.analysis import objects
    facts = Facts(parse_module(HEAD + "model = nn.Linear(2, 2)\nnets = [n.cuda() for n in [model]]\nopt = model\n"))
    flow = objects.of(facts)
    names = [n for n in facts.names if n.value in ("model", "opt")]

    def walked(node):
        raise AssertionError(f"walked up from {node.value}")
    monkeypatch.setattr(facts, "ancestors", walked)
    assert names and all(flow._comprehension_item(n) is None for n in names)


def _role_questions(n: int, monkeypatch) -> tuple[int, bool]:
    """How often the shared-value question of `if cfg.ratio > 1:` reads a test for its names
    (`_read_for_rank`), where `cfg` is assigned `n` times from itself; and the answer."""
    import libcst as cst

    from ddpify.analysis.same_values import SameValues, same_everywhere
    from ddpify.syntax import matchers as mt

    code = "import torch\ncfg = load()\n" + "".join(f"cfg = update(cfg, {i})\n" for i in range(n)) \
        + "if cfg.ratio > 1:\n    torch.save(cfg, 'a')\n"
    module = parse_module(code.encode())
    facts = Facts(module)
    asked: list = []
    original = SameValues._read_for_rank

    def counted(self, test):
        asked.append(test)
        return original(self, test)
    monkeypatch.setattr(SameValues, "_read_for_rank", counted)
    answer = same_everywhere(facts, mt.findall(module, cst.If)[0].test)
    monkeypatch.undo()
    return len(asked), answer


def test_a_name_assigned_from_itself_is_read_for_a_rank_once_per_source(monkeypatch):
    """Whether a test reads a rank by role follows its names' sources two deep; a name assigned
    from itself (`cfg = update(cfg, i)`) is met again through each of its sources, and each was
    asked again every time: the square of the sources (111 questions for 10, 421 for 20; RPipe's
    train_model.py: 20,839 questions, 94 distinct, 9x the LibCST floor). Each is now answered
    once per question: twice the sources, twice the questions, the same answer."""
    small, small_answer = _role_questions(10, monkeypatch)
    large, large_answer = _role_questions(20, monkeypatch)
    assert small_answer is large_answer
    assert large <= 2.5 * small
