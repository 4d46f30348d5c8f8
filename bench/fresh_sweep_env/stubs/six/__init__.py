"""A stand-in for six (not installed here): Python 3's names for what six.moves and the string
types give (urllib, range as xrange, str)."""
string_types = (str,)
text_type = str
integer_types = (int,)
PY2, PY3 = False, True
