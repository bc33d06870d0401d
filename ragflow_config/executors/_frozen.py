"""Imported last by the parser processes' fork server: freeze what it has imported.

The fork server has no other hook between its imports and its first fork. A
frozen object is never visited by the garbage collector, so a parser process
forked from the server no longer writes to (and so copies) every page of the
server's imported modules on its first collection: the pages stay shared.
"""

import gc

gc.freeze()
