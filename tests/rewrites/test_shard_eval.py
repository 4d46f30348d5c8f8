"""shard-eval: evaluation loops split across processes where the numbers stay exact, kept whole
(with a note) where a split would change them."""

from __future__ import annotations

import pytest

from tests.support.snippets import EPOCHS, IMPORTS, LOADER, MODEL, TRAINS, kept, pair, rewrite_tests, run

NAME = "shard-eval"

PAIRS = [
    pair("""\
from tqdm import tqdm
class Data:
    def setup(self):
        self.val_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
def evaluate(net, loader):
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += ((net(x) - y) ** 2).sum().item()
    return total / len(loader.dataset)
dm = Data()
dm.setup()
print(evaluate(model, dm.val_loader))
""", """\
from ddpify_runtime import reduce_sum, shard_eval

from tqdm import tqdm
class Data:
    def setup(self):
        self.val_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
def evaluate(net, loader):
    total = 0.0
    with torch.no_grad():
        for x, y in shard_eval(loader):
            total += ((net(x) - y) ** 2).sum().item()
        total = reduce_sum(total)
    return total / len(loader.dataset)
dm = Data()
dm.setup()
print(evaluate(model, dm.val_loader))
""", "a_loader_kept_as_an_attribute_of_a_data_object_and_handed_to_the_evaluation_is_split",
         scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
class Data:
    def setup(self, cached):
        self.val_loader = [(torch.randn(4, 2), torch.randn(4, 1))] if cached else \\
            DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
def evaluate(net, loader):
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += ((net(x) - y) ** 2).sum().item()
    return total
dm = Data()
dm.setup(False)
print(evaluate(model, dm.val_loader))
""", "an_attribute_that_may_hold_a_list_of_batches_is_no_loader_to_split", report=[], scaffold=TRAINS.at_end),
    pair("""\
from tqdm import tqdm
def count_correct(out, y):
    return (out.sign() == y.sign()).sum().item()
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
correct = 0
with torch.no_grad():
    for x, y in test_loader:
        correct += count_correct(model(x), y)
print(correct / len(test_loader.dataset))
""", """\
from ddpify_runtime import reduce_sum, shard_eval

from tqdm import tqdm
def count_correct(out, y):
    return (out.sign() == y.sign()).sum().item()
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
correct = 0
with torch.no_grad():
    for x, y in shard_eval(test_loader):
        correct += count_correct(model(x), y)
    correct = reduce_sum(correct)
print(correct / len(test_loader.dataset))
""", "a_helper_returning_a_count_over_the_batchs_samples_is_reduced_after_the_loop", scaffold=TRAINS.at_end),
    # (the twentieth sweep's ERA-V2 session 5, decision 0162) the criterion is handed in, built with
    # `reduction='sum'` by the one caller: each batch's loss is a sum over its samples
    pair("""\
from tqdm import tqdm
def test(net, loader, criterion):
    total = 0
    with torch.no_grad():
        for x, y in loader:
            total += criterion(net(x), y).item()
    return total / len(loader.dataset)
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
print(test(model, test_loader, torch.nn.MSELoss(reduction='sum')))
""", """\
from ddpify_runtime import reduce_sum, shard_eval

from tqdm import tqdm
def test(net, loader, criterion):
    total = 0
    with torch.no_grad():
        for x, y in shard_eval(loader):
            total += criterion(net(x), y).item()
        total = reduce_sum(total)
    return total / len(loader.dataset)
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
print(test(model, test_loader, torch.nn.MSELoss(reduction='sum')))
""", "a_criterion_handed_in_built_with_reduction_sum_by_its_caller_is_a_sum_over_samples",
         scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
def test(net, loader, criterion):
    total = 0
    with torch.no_grad():
        for x, y in loader:
            total += criterion(net(x), y).item()
    return total / len(loader.dataset)
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
print(test(model, test_loader, torch.nn.MSELoss(reduction='sum')))
print(test(model, test_loader, torch.nn.MSELoss()))
""", "kept_whole_where_one_caller_hands_in_a_criterion_that_averages", scaffold=TRAINS.at_end),
    pair("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total, correct, n = 0.0, 0, 0
with torch.no_grad():
    for x, y in test_loader:
        out = model(x)
        total += ((out - y) ** 2).sum().item()
        correct += (out.sign() == y.sign()).sum().item()
        n += y.size(0)
print(total / len(test_loader.dataset), correct / n)
""", """\
from ddpify_runtime import reduce_sum, shard_eval

from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total, correct, n = 0.0, 0, 0
with torch.no_grad():
    for x, y in shard_eval(test_loader):
        out = model(x)
        total += ((out - y) ** 2).sum().item()
        correct += (out.sign() == y.sign()).sum().item()
        n += y.size(0)
    total, correct, n = reduce_sum(total, correct, n)
print(total / len(test_loader.dataset), correct / n)
""", "sums_over_samples_are_reduced_after_the_loop", scaffold=TRAINS.at_end),
    pair("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
preds, targets = [], []
with torch.no_grad():
    for x, y in test_loader:
        preds.append(model(x))
        targets.extend(y.view(-1).tolist())
error = (torch.cat(preds).view(-1) - torch.tensor(targets)).abs().median()
""", """\
from ddpify_runtime import gather_ordered, shard_eval

from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
preds, targets = [], []
with torch.no_grad():
    for x, y in shard_eval(test_loader):
        preds.append(model(x))
        targets.extend(y.view(-1).tolist())
    preds = gather_ordered(preds)
    targets = gather_ordered(targets)
error = (torch.cat(preds).view(-1) - torch.tensor(targets)).abs().median()
""", "per_sample_lists_are_gathered_in_order", scaffold=TRAINS.at_end),
    pair("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
seen = torch.zeros(2)
hits = 0
for x, y in test_loader:
    pred = model(x).view(-1) > 0
    for c in range(2):
        seen[c] += (pred == c).sum()
    for p, t in zip(pred, y.view(-1)):
        hits += int(p == (t > 0))
print(seen.tolist(), hits / len(test_loader.dataset))
""", """\
from ddpify_runtime import reduce_sum, shard_eval

from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
seen = torch.zeros(2)
hits = 0
for x, y in shard_eval(test_loader):
    pred = model(x).view(-1) > 0
    for c in range(2):
        seen[c] += (pred == c).sum()
    for p, t in zip(pred, y.view(-1)):
        hits += int(p == (t > 0))
seen, hits = reduce_sum(seen, hits)
print(seen.tolist(), hits / len(test_loader.dataset))
""", "indexed_and_nested_sums_are_reduced", scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total = 0.0
for x, y in test_loader:
    total += ((model(x) - y) ** 2).mean().item()
print(total / len(test_loader))
""", "kept_whole_for_a_loss_averaged_per_batch", report=[
        "note: evaluation of `test_loader` kept whole: the loss is averaged per batch (`total / len(test_loader)`), and the batches differ once split",
    ], scaffold=TRAINS.at_end),
    pair("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
preds = []
bar = tqdm(test_loader)
for x, y in enumerate(bar):
    preds += model(y[0]).view(-1).tolist()
print(len(preds))
""", """\
from ddpify_runtime import gather_ordered, shard_eval

from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
preds = []
bar = tqdm(shard_eval(test_loader))
for x, y in enumerate(bar):
    preds += model(y[0]).view(-1).tolist()
preds = gather_ordered(preds)
print(len(preds))
""", "a_progress_bar_bound_to_a_name_is_split_inside", scaffold=TRAINS.at_end),
    pair("""\
class AverageMeter:
    def __init__(self):
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def test(model, test_loader):
    meter = AverageMeter()
    for x, y in test_loader:
        meter.update(((model(x) - y) ** 2).mean().item(), x.size(0))
    return meter.avg


test(model, DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4))
""", """\
from ddpify_runtime import reduce_sum, shard_eval

class AverageMeter:
    def __init__(self):
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def test(model, test_loader):
    meter = AverageMeter()
    for x, y in shard_eval(test_loader):
        meter.update(((model(x) - y) ** 2).mean().item(), x.size(0))
    meter.sum, meter.count = reduce_sum(meter.sum, meter.count)
    meter.avg = meter.sum / meter.count
    return meter.avg


test(model, DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4))
""", "a_meter_made_afresh_for_the_pass_is_summed_and_its_average_computed_again", scaffold=TRAINS.at_end),
    # (the seventeenth sweep's lhy_covid_regression, decision 0134: `test()` kept whole, "`total_loss.update(...)`
    # may accumulate where ddpify cannot reduce it")
    kept("""\
class AverageMeter:
    def __init__(self):
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


meter = AverageMeter()


def test(model, test_loader):
    for x, y in test_loader:
        meter.update(((model(x) - y) ** 2).mean().item(), x.size(0))
    return meter.avg


test(model, DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4))
""", "kept_whole_for_a_meter_kept_over_the_passes", report=[
        "note: evaluation of `test_loader` kept whole: `meter.update(((model(x) - y) ** 2).mean().item(), x.size(0))` may accumulate where ddpify cannot reduce it",
    ], scaffold=TRAINS.at_end),
    pair("""\
test_loader = DataLoader(TensorDataset(torch.randn(9, 2)), batch_size=4)
preds = []
for i, data in enumerate(test_loader):
    inputs = data[0]
    inputs = inputs.to("cpu")
    for p in model(inputs).view(-1).tolist():
        preds.append(p)
print(len(preds))
""", """\
from ddpify_runtime import gather_ordered, shard_eval

test_loader = DataLoader(TensorDataset(torch.randn(9, 2)), batch_size=4)
preds = []
for i, data in enumerate(shard_eval(test_loader)):
    inputs = data[0]
    inputs = inputs.to("cpu")
    for p in model(inputs).view(-1).tolist():
        preds.append(p)
preds = gather_ordered(preds)
print(len(preds))
""", "a_name_set_anew_for_each_batch_and_moved_is_no_state_carried", scaffold=TRAINS.at_end),
    pair("""\
test_loader = DataLoader(TensorDataset(torch.randn(9, 2)), batch_size=4)
preds = []
for i, data in enumerate(test_loader):
    inputs = data[0]
    preds += model(inputs).view(-1).tolist()
print(len(preds))
scale = lambda inputs: inputs * 2
""", """\
from ddpify_runtime import gather_ordered, shard_eval

test_loader = DataLoader(TensorDataset(torch.randn(9, 2)), batch_size=4)
preds = []
for i, data in enumerate(shard_eval(test_loader)):
    inputs = data[0]
    preds += model(inputs).view(-1).tolist()
preds = gather_ordered(preds)
print(len(preds))
scale = lambda inputs: inputs * 2
""", "a_lambdas_own_parameter_after_the_loop_reads_no_batch_name", scaffold=TRAINS.at_end),
    # (the eighteenth sweep's protonet homework, decision 0130: `lambda x: Image.open(x)` of a module the
    # program merges after the loop was taken for a read of the loop's `x`, "carried out of the loop")
    # (the seventeenth sweep's phoneme notebooks, decision 0134: `inputs = data; inputs = inputs.to(device)`
    # kept the test pass whole, "`inputs` is carried out of the loop")
    kept("""\
test_loader = DataLoader(TensorDataset(torch.randn(9, 2)), batch_size=4)
preds = []
inputs = None
for i, data in enumerate(test_loader):
    if inputs is None:
        inputs = data[0]
    inputs = inputs.to("cpu")
    preds += model(inputs).view(-1).tolist()
print(len(preds))
""", "kept_whole_for_a_name_set_under_an_if_and_read_at_the_next_batch", report=[
        "note: evaluation of `test_loader` kept whole: `inputs` is carried out of the loop by `inputs = data[0]`, which is not a sum over samples",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total = 0.0
bar = tqdm(test_loader)
for x, y in bar:
    total += ((model(x) - y) ** 2).mean().item()
print(total / len(bar))
""", "kept_whole_for_a_loss_averaged_over_a_progress_bar_s_batches", report=[
        "note: evaluation of `test_loader` kept whole: the loss is averaged per batch (`total / len(bar)`), and the batches differ once split",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total = 0.0
for x, y in tqdm(test_loader, total=len(test_loader)):
    total += ((model(x) - y) ** 2).sum().item()
print(total)
""", "kept_whole_for_a_read_of_the_number_of_batches", report=[
        "note: evaluation of `test_loader` kept whole: it reads `len(test_loader)`, the number of batches, which differs once split",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total = 0.0
for x, y in test_loader:
    total += ((model(x) - y) ** 2).mean().item()
print(total / len(test_loader.dataset))
""", "kept_whole_for_a_total_of_one_value_per_batch", report=[
        "note: evaluation of `test_loader` kept whole: `total` adds one value per batch (`((model(x) - y) ** 2).mean().item()`), and the batches differ once split",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
def batch_error(out, y):
    return ((out - y) ** 2).mean().item()
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total = 0.0
for x, y in test_loader:
    total += batch_error(model(x), y)
print(total / len(test_loader.dataset))
""", "kept_whole_for_a_helper_returning_one_value_per_batch", report=[
        "note: evaluation of `test_loader` kept whole: `total` adds one value per batch (`batch_error(model(x), y)`), and the batches differ once split",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total, batches = 0.0, 0
for x, y in test_loader:
    total += ((model(x) - y) ** 2).sum().item()
    batches += 1
print(total / batches)
""", "kept_whole_for_a_count_of_batches", report=[
        "note: evaluation of `test_loader` kept whole: `batches` counts batches, and the batches differ once split",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
best = 0.0
for x, y in test_loader:
    best = max(best, model(x).max().item())
print(best)
""", "kept_whole_for_a_maximum_carried_out_of_the_loop", report=[
        "note: evaluation of `test_loader` kept whole: `best` is carried out of the loop by `best = max(best, model(x).max().item())`, which is not a sum over samples",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
avg = 0.0
for x, y in test_loader:
    avg = 0.9 * avg + 0.1 * ((model(x) - y) ** 2).mean().item()
print(avg)
""", "kept_whole_for_a_running_average_carried_out_of_the_loop", report=[
        "note: evaluation of `test_loader` kept whole: `avg` is carried out of the loop by `avg = 0.9 * avg + 0.1 * ((model(x) - y) ** 2).mean().item()`, which is not a sum over samples",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
for x, y in test_loader:
    meter.update(((model(x) - y) ** 2).mean().item(), x.size(0))
print(meter.avg)
""", "kept_whole_for_a_meter_update", report=[
        "note: evaluation of `test_loader` kept whole: `meter.update(((model(x) - y) ** 2).mean().item(), x.size(0))` may accumulate where ddpify cannot reduce it",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total = 0.0
for x, y in test_loader:
    total += ((model(x) - y) ** 2).sum().item()
    if total > 5:
        break
print(total)
""", "kept_whole_for_a_break", report=[
        "note: evaluation of `test_loader` kept whole: the loop may stop early (`break`)",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
def first_bad(model, test_loader):
    bad = 0
    for x, y in test_loader:
        for o, t in zip(model(x), y):
            bad += int(o.item() > t.item())
            if bad > 3:
                return bad
    return bad


print(first_bad(model, test_loader))
""", "kept_whole_for_a_return_from_the_loop", report=[
        "note: evaluation of `test_loader` kept whole: the loop may stop early (`return bad`)",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
try:
    print(len(test_loader))
except RuntimeError:
    total = 0.0
    for x, y in test_loader:
        total += ((model(x) - y) ** 2).sum().item()
    print(total)
""", "kept_whole_for_a_loop_in_an_except_block", report=[
        "note: evaluation of `test_loader` kept whole: it runs in an `except` block, which may run on some processes only",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total = 0.0
for x, y in test_loader:
    total += ((model(x) - y) ** 2).sum().item()
else:
    print(total)
""", "kept_whole_for_a_loop_else_block", report=[
        "note: evaluation of `test_loader` kept whole: its `else` block runs before the processes' shares could be added up",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
print(sum(((model(x) - y) ** 2).sum().item() for x, y in test_loader))
""", "kept_whole_for_a_comprehension_over_the_loader", report=[
        "note: evaluation of `test_loader` kept whole: it runs in a comprehension (`sum(((model(x) - y) ** 2).sum().item() for x, y in test_loader)`), not in a loop ddpify splits",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
correct, n = 0, 0
for x, y in test_loader:
    correct += (model(x).sign() == y.sign()).sum().item()
    n += y.size(0)
    running = correct / n
""", "kept_whole_for_a_total_read_inside_the_loop", report=[
        "note: evaluation of `test_loader` kept whole: `correct` is read inside the loop, before every process has added its share",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total = 0.0
for x, y in test_loader:
    loss = ((model(x) - y) ** 2).sum().item()
    total += loss
    print(loss)
print(total)
""", "kept_whole_for_a_print_inside_the_loop", report=[
        "note: evaluation of `test_loader` kept whole: it prints inside the loop (the main process would print its share only)",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
accs = []
for x, y in test_loader:
    accs.append((model(x).sign() == y.sign()).float().mean().item())
print(sum(accs) / len(accs))
""", "kept_whole_for_a_list_appended_once_per_batch", report=[
        "note: evaluation of `test_loader` kept whole: `accs` holds one item per batch, and the batches differ once split",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
accs = []
for x, y in test_loader:
    accs += [(model(x).sign() == y.sign()).float().mean().item()]
print(sum(accs) / len(accs))
""", "kept_whole_for_a_list_extended_once_per_batch", report=[
        "note: evaluation of `test_loader` kept whole: `accs` holds one item per batch, and the batches differ once split",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
if ((model(torch.randn(2)) - 1) ** 2).item() < 1:
    total = 0.0
    for x, y in test_loader:
        total += ((model(x) - y) ** 2).sum().item()
    print(total)
""", "kept_whole_for_a_condition_that_may_differ_between_processes", report=[
        "note: evaluation of `test_loader` kept whole: it runs only while `((model(torch.randn(2)) - 1) ** 2).item() < 1`, which may differ between processes",
    ], scaffold=TRAINS.at_end),
    kept("""\
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total = 0.0
for i, (x, y) in enumerate(test_loader):
    total += ((model(x) - y) ** 2).sum().item()
print(total / (i + 1))
""", "kept_whole_for_the_batch_read_after_the_loop", report=[
        "note: evaluation of `test_loader` kept whole: `i` (the batch) is read after the loop",
    ], scaffold=TRAINS.at_end),
    pair("""\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total, correct, n = 0.0, 0, 0
with torch.no_grad():
    for x, y in test_loader:
        out = model(x)
        total += ((out - y) ** 2).sum().item()
        correct += (out.sign() == y.sign()).sum().item()
        n += y.size(0)
print(total / len(test_loader.dataset), correct / n)
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import device_ids, reduce_sum, shard_eval

model = DistributedDataParallel(model, device_ids=device_ids(model))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total, correct, n = 0.0, 0, 0
with torch.no_grad():
    for x, y in shard_eval(test_loader, model):
        out = model.module(x)
        total += ((out - y) ** 2).sum().item()
        correct += (out.sign() == y.sign()).sum().item()
        n += y.size(0)
    total, correct, n = reduce_sum(total, correct, n)
print(total / len(test_loader.dataset), correct / n)
""", "forwards_go_through_the_bare_module_and_its_buffers_come_from_the_main_process", also={"wrap-model"}, report=[
        "change: `model` wrapped in DistributedDataParallel",
        "change: evaluation of `test_loader` split across processes, each sample read once (shard_eval); after the loop `total`, `correct`, `n` summed over the processes (reduce_sum)",
        "change: `model(...)` in evaluation runs the bare module: no collective inside the loop",
    ], scaffold=TRAINS.instead_of("opt", "loop")),
    # Under FSDP2 each forward gathers the parameters from every process: a split evaluation
    # (uneven batch counts, forwards on some processes only) would hang.
    pair("""\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total, correct, n = 0.0, 0, 0
with torch.no_grad():
    for x, y in test_loader:
        out = model(x)
        total += ((out - y) ** 2).sum().item()
        correct += (out.sign() == y.sign()).sum().item()
        n += y.size(0)
print(total / len(test_loader.dataset), correct / n)
""", """\
from ddpify_runtime import shard_model

model = shard_model(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
total, correct, n = 0.0, 0, 0
with torch.no_grad():
    for x, y in test_loader:
        out = model(x)
        total += ((out - y) ** 2).sum().item()
        correct += (out.sign() == y.sign()).sum().item()
        n += y.size(0)
print(total / len(test_loader.dataset), correct / n)
""", "fsdp_keeps_every_evaluation_whole_with_a_note", also={"wrap-model"}, strategy="fsdp", report=[
        "change: `model` sharded with fully_shard (FSDP2): the runtime shards the blocks of each nn.ModuleList/nn.Sequential it finds, then the root",
        "note: evaluation of `test_loader` kept whole: under FSDP every forward gathers the parameters from all processes, so each runs every batch",
    ], scaffold=TRAINS.instead_of("opt", "loop")),
    kept("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm
test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def run_epoch(data, train):
    total = 0.0
    for x, y in data:
        loss = ((model(x) - y) ** 2).mean()
        if train:
            opt.zero_grad()
            loss.backward()
            opt.step()
        total += loss.item()
    return total


for epoch in range(2):
    run_epoch(loader, True)
    print(run_epoch(test_loader, False))
""", "an_evaluation_through_a_loop_that_also_trains_stays_whole_with_a_note", report=[
        "note: evaluation of `data` kept whole: it runs through a loop that also trains",
    ]),
]

UNCHANGED = [
    # Accuracy over the (sharded) training loader is shard-metrics' business: no shard_eval on it.
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in train_loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
from tqdm import tqdm
test_train_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)
correct = 0
for x, y in train_loader:
    correct += (model(x).sign() == y.sign()).sum().item()
print(correct)
""", id="a_training_loader_evaluated_again_is_no_evaluation_loader"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)

TEST_LOADER = ("from tqdm import tqdm\n"
               "test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)\n")
HEAD = IMPORTS + LOADER + MODEL + EPOCHS + TEST_LOADER

SUMS = """\
total, correct, n = 0.0, 0, 0
with torch.no_grad():
    for x, y in {loader}:
        out = model(x)
        total += ((out - y) ** 2).sum().item()
        correct += (out.sign() == y.sign()).sum().item()
        n += y.size(0)
{reduced}print(total / len(test_loader.dataset), correct / n)
"""


def test_no_shard_eval_keeps_today_s_whole_evaluation():
    code, changes = run(HEAD + SUMS.format(loader="test_loader", reduced=""), skip=frozenset({NAME}))
    assert "shard_eval" not in code and "reduce_sum" not in code and "model.module(x)" not in code
    assert not any(c.rewrite == NAME for c in changes)


LOADERS_IN_A_DICT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def load():
    train = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    return {"train": train, "test": DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)}


def evaluate(net, loader):
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += ((net(x) - y) ** 2).sum().item()
    return total


def train(net, trainloader, testloader):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in trainloader:
            opt.zero_grad()
            ((net(x) - y) ** 2).mean().backward()
            opt.step()
        print(evaluate(net, testloader))


loaders = load()
train(torch.nn.Linear(2, 1), loaders["train"], loaders["test"])
"""


def test_a_loader_read_from_a_dict_of_loaders_by_its_key_is_that_loader_alone():
    """A model zoo's `load_cifar10()` returns `{"trainloader": ..., "testloader": ...}`, and
    `train(net, config, device, loader["trainloader"], loader["testloader"])` evaluates the second:
    the loader read is the item under its key, not every loader of the dict. Taken for both, the
    evaluation was no evaluation (it may read the training loader: left whole, unsaid) and the
    training loop a "loop that also trains" an evaluation loader (decision 0174)."""
    code, changes = run(LOADERS_IN_A_DICT)
    notes = [c.message for c in changes if c.rewrite == NAME]
    assert "for x, y in shard_eval(loader, net):" in code and "reduce_sum(total)" in code
    assert not any("also trains" in note for note in notes), notes


def test_a_wrapped_models_own_forward_called_in_a_split_evaluation_runs_the_bare_module():
    """A course homework validates with `pred = model.forward(img)`: the wrapper's own forward, which
    broadcasts the buffers of a model with batch norm, a collective, in a loop split unevenly across
    the processes (33 samples: 5 batches on one, 4 on the other), hung at the last batch. It runs
    the bare module, as `model(x)` does; the training loop's `model.forward(x)` stays the wrapper's
    (decision 0174, after the freeze)."""
    code, changes = run("""\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,))), batch_size=8, shuffle=True)
val_loader = DataLoader(TensorDataset(torch.randn(33, 4), torch.randint(0, 3, (33,))), batch_size=4)
for epoch in range(2):
    for x, y in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model.forward(x), y).backward()
        optimizer.step()
    correct = 0
    for x, y in val_loader:
        correct += int((model.forward(x).argmax(1) == y).sum())
    print(correct)
""")
    assert "nn.functional.cross_entropy(model.forward(x), y).backward()" in code, code
    assert "for x, y in shard_eval(val_loader, model):" in code and \
           "correct += int((model.module.forward(x).argmax(1) == y).sum())" in code, code
    assert "`model.forward(...)` in evaluation runs the bare module: no collective inside the loop" in \
           [c.message for c in changes if c.rewrite == NAME]
