"""The input search's mutant comparison (issue 49 item 2), in the driver's own process: a
surviving mutant made beside the original, compared on a copy of each input, and the input that
tells them apart kept with the mutants it tells apart (``equisa_core.testgen.search_driver``)."""

from __future__ import annotations

import json

from equisa_core.testgen import search_driver
from equisa_core.testgen.input_search import SearchedFunction, read_search_records, search_driver_module


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def append_twice(items, x):
    items.append(x)
    items.append(x)


def test_a_mutant_is_made_in_a_copy_of_the_function_s_globals():
    mutant = search_driver._mutant(clamp, "def clamp(x, lo, hi):\n    return max(lo, min(x, hi)) + helper\n")
    assert mutant is not None and mutant is not clamp and clamp.__globals__.get("helper") is None
    assert search_driver._mutant(clamp, "def clamp(:\n") is None  # does not compile
    assert search_driver._mutant(clamp, "def other(x):\n    return x\n") is None  # defines another name


def test_an_input_on_which_a_mutant_answers_otherwise_is_kept_with_the_mutants_it_tells_apart():
    tail = "    if x > hi:\n        return hi\n    return x\n"
    boundary = "def clamp(x, lo, hi):\n    if x <= lo:\n        return lo\n" + tail
    wrong = "def clamp(x, lo, hi):\n    if x < lo:\n        return hi\n" + tail
    killer = search_driver._Killer(
        clamp,
        [("m1", search_driver._mutant(clamp, boundary)), ("m2", search_driver._mutant(clamp, wrong))],
        deadline=float("inf"),
    )
    assert killer(5, 0, 10) == 5 and killer.found == []  # the same answer from all three
    assert killer(0, 0, 10) == 0  # x == lo: the boundary mutant answers lo as well, the same
    assert killer.found == []
    killer(-3, 0, 10)  # below: the wrong mutant answers hi
    assert killer.found == [{"args": ["-3", "0", "10"], "raised": None, "kills": ["m2"]}]
    assert list(killer.alive) == ["m1"]  # an equivalent one here stays, the told one is not tried again


def test_arguments_left_otherwise_and_a_loop_tell_a_mutant_apart():
    once = "def append_twice(items, x):\n    items.append(x)\n"
    loops = "def append_twice(items, x):\n    while True:\n        pass\n"
    killer = search_driver._Killer(
        append_twice,
        [
            ("once", search_driver._mutant(append_twice, once)),
            ("loops", search_driver._mutant(append_twice, loops)),
        ],
        deadline=float("inf"),
    )
    items = [1]
    killer(items, 2)
    assert items == [1, 2, 2]  # the search's own call ran on the caller's list; the mutants on copies
    assert killer.found == [{"args": ["[1]", "2"], "raised": None, "kills": ["once", "loops"]}]
    assert search_driver._outcome(search_driver._mutant(append_twice, loops), ([], 1)) == "timeout"


def test_the_driver_passes_each_function_its_survivors_and_the_record_says_what_they_told_apart():
    function = SearchedFunction(qualname="clamp", strategies=("st.integers()",) * 3, typed=False)
    text = search_driver_module(
        "m.py", "m", [function], 10, 1.0, (), {"clamp": [("m1 line 2", "def clamp(x): ...")]}
    )
    assert "[('m1 line 2', 'def clamp(x): ...')])" in text
    assert "[('m1" not in search_driver_module("m.py", "m", [function], 10, 1.0)
    line = json.dumps(
        {
            "kind": "testgen-search",
            "qualname": "clamp",
            "typed": False,
            "examples": 3,
            "arcs": 4,
            "mutants": 2,
            "kept": [
                {"args": ["1"], "raised": None},
                {"args": ["-3"], "raised": None, "kills": ["m1", "m2"]},
            ],
        }
    )
    (record,) = read_search_records([line])
    assert record.mutants == 2 and record.killed == 2 and record.kept[1].kills == ("m1", "m2")


class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        return self.items.pop()


def test_a_sequence_made_again_with_a_mutant_swapped_in_is_kept_when_it_ends_otherwise():
    """``pop`` taking the first item shows only after two pushes: the sequence that does that is kept,
    as the original made it, and the class has its own method back."""
    fifo = "def pop(self):\n    return self.items.pop(0)\n"
    made = search_driver._mutant_method(Stack, "pop", fifo)
    assert made is not None and made is not Stack.__dict__["pop"]
    assert search_driver._mutant_method(Stack, "pop", "def pop(self):\n    return super().pop()\n") is None
    killer = search_driver._SequenceKiller(Stack, Stack, [("m1", "pop", made)], deadline=float("inf"))
    obj = killer()
    search_driver._WATCHING.append(killer)
    try:
        search_driver._step(obj, "push", (1,))
        search_driver._step(obj, "pop", ())
        obj = killer()  # the next sequence begins: the last one (one push) is compared, the same
        assert killer.found == []
        for name, args in (("push", (1,)), ("push", (2,)), ("pop", ())):
            search_driver._step(obj, name, args)
        killer.flush(covering=False)
    finally:
        search_driver._WATCHING.clear()
    (found,) = killer.found
    assert found["kills"] == ["m1"] and [s["result"] for s in found["steps"]] == ["None", "None", "2"]
    assert found["state"]["obj.items"] == "[1]" and Stack.__dict__["pop"] is not made
