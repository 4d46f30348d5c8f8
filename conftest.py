"""Repository-wide pytest options, the signal dispositions of a terminal, and the order of the
test files (the long ones first)."""

import signal

# A suite started in the background of a shell without job control (`cmd &` in a script, as CI
# runners and `setsid ... &` do) inherits SIGINT ignored, and every process it starts would
# too: the tests of Ctrl-C (tests/test_file_safety.py, tests/test_run.py) would then test an
# ignored signal. Python's own default is restored, as an interactive run starts with it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite fixtures/*/after.py and report.txt from the current converter")


def pytest_configure(config):
    """pytest-xdist hands its workers the files in the order below, not its own (by number of tests,
    most first, which put the slow files, a few tests each, last: one worker ran them alone)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items):
    """The files that hold slow or stdlib tests run first, each file's tests in their order: under
    `-n 2 --dist loadfile` (README's test command) their long launches then start while the other
    worker runs the quick tests, instead of last, with one worker idle while the other finishes a
    batch of launches (the order of the tests does not change what any of them proves)."""
    long = {item.path for item in items if item.get_closest_marker("slow") or item.get_closest_marker("stdlib")}
    items.sort(key=lambda item: item.path not in long)  # a stable sort: the order within each part stays
