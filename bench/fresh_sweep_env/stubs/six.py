"""A stand-in for six (not installed here): six.moves.urllib is the standard library's."""

import types
import urllib.request

moves = types.SimpleNamespace(urllib=types.SimpleNamespace(request=urllib.request))
