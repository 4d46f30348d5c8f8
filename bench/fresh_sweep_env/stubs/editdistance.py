"""A stand-in for editdistance (not installed here): ``eval(a, b)``, the Levenshtein distance of
two sequences whose items compare with ``==``."""


def eval(a, b):  # noqa: A001 - the package's own name
    a, b = list(a), list(b)
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


distance = eval
