"""The suite layer: a suite file read, validated and expanded into cells.

``load_suite(path)`` reads and checks the file's structure; ``validate_suite(loaded,
registry)`` validates and expands every profile (``profile_cells`` one profile's under
``--set`` and ``--only``). Commands read a suite through ``geobench.study.Study``, which
adds the claims.
"""

from geobench.suite.expand import CELL_LIMIT, cell_id, validate_suite
from geobench.suite.load import LoadedSuite, format_loc, load_suite
from geobench.suite.merge import deep_merge, get_dotted, set_dotted
from geobench.suite.yamlio import SuiteError

__all__ = ["CELL_LIMIT", "LoadedSuite", "SuiteError", "cell_id", "deep_merge",
           "format_loc", "get_dotted", "load_suite", "set_dotted", "validate_suite"]
