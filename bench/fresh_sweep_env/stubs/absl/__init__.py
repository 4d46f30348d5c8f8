"""A stand-in for absl-py (not installed here): `flags` (DEFINE_*, FLAGS, --flagfile) and `app.run`,
enough for a program that defines its options with absl and reads them from FLAGS."""
