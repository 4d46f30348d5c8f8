"""Repository-wide pytest options, and the signal dispositions of a terminal."""

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
