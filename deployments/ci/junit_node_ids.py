"""The pytest node ids of the failing tests of a JUnit XML report, one per line (stdlib only: it runs in
a CI job before EQUISA is installed; ``action.yml`` calls it, and the example workflow holds a copy).

pytest writes ``classname`` as the node id's path with ``/`` as ``.`` and without ``.py``, followed by
the test's classes (``tests.test_x.TestFoo`` for ``tests/test_x.py::TestFoo::test_a``); the ``file``
attribute (``junit_family=xunit1``) names the module when present. Without it the longest prefix of
``classname`` that is a ``.py`` file under the root folder is the module and the rest are classes.

    python junit_node_ids.py junit.xml [ROOT]
"""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def node_id(classname: str, name: str, file: str, root: Path) -> str:
    """The node id of the test ``name`` of ``classname`` (``file``: the module, when the report says)."""
    parts = [part for part in classname.split(".") if part]
    if file:
        module = Path(file).with_suffix("").parts
        if tuple(parts[: len(module)]) == module:
            return "::".join([file, *parts[len(module):], name])
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (root / path).is_file():
            return "::".join([path, *parts[cut:], name])
    return "::".join(["/".join(parts) + ".py", name])  # no such file here: the report's own guess


def failing_node_ids(report: Path, root: Path) -> list:
    """The node ids of the test cases with a ``failure`` or an ``error``, in the report's order."""
    ids = []
    for case in ET.parse(report).iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            found = node_id(case.get("classname", ""), case.get("name", ""), case.get("file", ""), root)
            if found not in ids:
                ids.append(found)
    return ids


if __name__ == "__main__":
    print("\n".join(failing_node_ids(Path(sys.argv[1]), Path(sys.argv[2] if len(sys.argv) > 2 else "."))))
