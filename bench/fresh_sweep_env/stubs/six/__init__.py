"""A stand-in for six (not installed here): only six.moves.urllib, the standard library's."""
