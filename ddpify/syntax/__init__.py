"""The syntax layer: parsing, names, shapes of code and the facts of one walk."""
