"""agree-search: a search trial's suggestions (and pruning decisions) whose value is used are taken
from the main process on every process; a draw under a test that may differ between processes, or
in a comprehension, is left alone with a warning; a draw whose value nothing reads is left alone."""

from __future__ import annotations

from tests.support.snippets import only, rewrite_tests, rewritten, warnings

NAME = "agree-search"

HEAD = """\
import optuna
import torch
from torch.utils.data import DataLoader, TensorDataset
"""

TRAIN = """\
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=batch_size, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = getattr(torch.optim, name)(model.parameters(), lr=lr)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
    return 0.0


study = optuna.create_study(direction="minimize")
study.optimize(objective, n_trials=2)
"""

PAIRS = [
    # sweep14c's dota_tune (DostawcaSeksu/text-classification-rnn): the objective's suggestions come from
    # each process's own sampler; a pruning decision in the epoch loop, a test every process reaches
    (HEAD + """\
def objective(trial):
    lr = trial.suggest_float("lr", 1e-4, 1e-2, log=True)
    name = trial.suggest_categorical("optimizer", ["Adam", "SGD"])
    batch_size = trial.suggest_int("batch_size", 2, 4)
    if trial.should_prune():
        raise optuna.TrialPruned()
""" + TRAIN, HEAD + """\
from ddpify_runtime import from_main_process

def objective(trial):
    lr = from_main_process(lambda: trial.suggest_float("lr", 1e-4, 1e-2, log=True))
    name = from_main_process(lambda: trial.suggest_categorical("optimizer", ["Adam", "SGD"]))
    batch_size = from_main_process(lambda: trial.suggest_int("batch_size", 2, 4))
    if from_main_process(lambda: trial.should_prune()):
        raise optuna.TrialPruned()
""" + TRAIN),
]

UNCHANGED = [
    # a draw whose value nothing reads: nothing to agree on
    HEAD + """\
def objective(trial):
    trial.suggest_int("unused", 1, 2)
    lr, name, batch_size = 0.1, "SGD", 4
""" + TRAIN,
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


def test_a_draw_some_processes_may_not_reach_is_left_alone_and_named():
    """A suggestion under a test of the process's rank (a broadcast only some processes reach would
    wait forever) or in a comprehension is left as it is, with a warning at its line: the processes
    may train different hyperparameters, and ddpify says so."""
    code = HEAD + """\
import torch.distributed as dist
def objective(trial):
    lr, name, batch_size = 0.1, "SGD", 4
    if dist.get_rank() == 0:
        lr = trial.suggest_float("lr", 1e-4, 1e-2)
    sizes = [trial.suggest_int(f"size{i}", 2, 4) for i in range(2)]
""" + TRAIN
    result = rewritten(NAME, code)
    assert "from_main_process" not in result.code
    said = warnings(result.changes)
    assert len(said) == 2 and all("draws on each process's own search" in w for w in said)
    assert only(NAME, code) == result.code


def test_trials_run_in_threads_leave_every_draw_alone_and_named():
    """`study.optimize(objective, n_jobs=2)` runs trials in threads: a broadcast per draw from two
    threads at once would pair the wrong values (or wait forever). No draw is taken from the main
    process; the `optimize` call and each draw get a warning. Near miss: `n_jobs=1` converts."""
    code = PAIRS[0][0].replace("study.optimize(objective, n_trials=2)", "study.optimize(objective, n_trials=2, n_jobs=2)")
    result = rewritten(NAME, code)
    assert "from_main_process" not in result.code
    said = warnings(result.changes)
    assert len(said) == 5 and sum("runs its trials in threads" in w for w in said) == 1
    one = only(NAME, code.replace("n_jobs=2", "n_jobs=1"))
    assert one.count("from_main_process(lambda: trial.") == 4
