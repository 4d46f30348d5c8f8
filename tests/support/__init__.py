"""Test support shared by the unit, e2e, distributed and bench suites (like LibCST's
``codemod/_testing.py``): ``env`` (launch environments), ``probe`` (the one ``sitecustomize``
probe hook), ``records`` (the one reader of what it recorded), ``snippets`` (the pairs of
``tests/rewrites`` and the scaffold around them), ``goldens`` (converted code compared whole)."""
