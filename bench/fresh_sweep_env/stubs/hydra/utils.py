"""``hydra.utils`` of the stand-in: paths are resolved against the working folder, where the job runs."""

import os


def to_absolute_path(path):
    return os.path.abspath(path)


def get_original_cwd():
    return os.getcwd()
