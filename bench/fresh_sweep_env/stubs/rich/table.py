"""rich.table's Table as a plain printer: its rows, printed by the stand-in Console, are tab-joined lines."""


class Column:
    def __init__(self, header="", **kwargs):
        self.header = header


class Table:
    def __init__(self, *headers, title=None, **kwargs):
        self.title, self.columns, self.rows = title, [str(h) for h in headers], []

    def add_column(self, header="", **kwargs):
        self.columns.append(str(header))

    def add_row(self, *cells, **kwargs):
        self.rows.append([str(c) for c in cells])

    def __str__(self):
        lines = ([self.title] if self.title else []) + ["\t".join(self.columns)] + ["\t".join(r) for r in self.rows]
        return "\n".join(lines)
