"""rich.text's Text: the plain string it holds (its style accepted and ignored)."""


class Text(str):
    def __new__(cls, text="", style=None, **kwargs):
        return super().__new__(cls, text)
