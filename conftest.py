"""Repository-wide pytest options."""


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite fixtures/*/after.py and report.txt from the current converter")
