"""A stand-in for the unidecode package (not installed here): ASCII text passes through; other
characters are dropped."""


def unidecode(text):
    return text.encode("ascii", "ignore").decode("ascii")
