"""rich.progress's Progress as a silent context manager whose `track` yields the iterable's items
(the columns are accepted and ignored); `track` at module level likewise. `Text` and `filesize` as
rich.progress imports them (tqdm.rich takes them from there)."""

from rich import filesize  # noqa: F401  (rich.progress's own import, which tqdm.rich reads)
from rich.text import Text  # noqa: F401


class _Column:
    def __init__(self, *args, **kwargs):
        pass


TextColumn = SpinnerColumn = BarColumn = MofNCompleteColumn = TimeRemainingColumn = TimeElapsedColumn = _Column
TaskProgressColumn = _Column


def TaskID(number):
    return int(number)


def track(sequence, *args, **kwargs):
    yield from sequence


class Progress:
    def __init__(self, *columns, **kwargs):
        self.tasks = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def track(self, sequence, *args, **kwargs):
        yield from sequence

    def add_task(self, description, total=None, **kwargs):
        self.tasks.append(description)
        return len(self.tasks) - 1

    def update(self, task_id, **kwargs):
        pass

    def advance(self, task_id, advance=1):
        pass

    def reset(self, task_id=None, **kwargs):
        pass


class ProgressColumn:
    """The base of a custom column (`render(task)` returns its Text); subclasses call its __init__."""

    def __init__(self, table_column=None):
        self.table_column = table_column


class Task:
    """What a column renders: a task's fields (never rendered here)."""
