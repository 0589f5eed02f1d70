"""The Localization prompts: the seed's text verbatim, pure renderers, a stable hash."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from equisa_core.localization import prompts
from equisa_core.localization.prompts import (
    GENERATE_DEBUGGING_REFLECTION_SYSTEM_INSTRUCTIONS,
    GENERATE_INSPECTION_PATCH_SYSTEM_INSTRUCTIONS,
    GENERATE_PATCH_SYSTEM_INSTRUCTIONS,
    inspection_heartbeat,
    prompt_hash,
    render_inspection_patch,
    render_patch,
    render_reflection,
)

SOURCE = "def total(items):\n    return sum({i: i for i in items}.values())\n"


def test_the_instructions_are_the_seed_text():
    assert GENERATE_INSPECTION_PATCH_SYSTEM_INSTRUCTIONS.startswith(
        "You are a expert debugger. You are given a function's source code and you need to\n"
        "provide a MODIFIED version of this function that includes validations (assertions\n"
    )
    heartbeat = '   print(f"--- INSPECTION_START: {target_node} ---")\n'
    assert heartbeat in GENERATE_INSPECTION_PATCH_SYSTEM_INSTRUCTIONS
    assert GENERATE_INSPECTION_PATCH_SYSTEM_INSTRUCTIONS.endswith(
        "6. Ensure the code is syntactically correct and matches the original function's\n   signature."
    )
    assert "THE GOLDEN RULE OF CALLEES:\n" in GENERATE_DEBUGGING_REFLECTION_SYSTEM_INSTRUCTIONS
    assert (
        'of these two labels: "CONFIRMED_BUGGY" or "CONFIRMED_NOT_BUGGY".\n'
        in GENERATE_DEBUGGING_REFLECTION_SYSTEM_INSTRUCTIONS
    )
    assert GENERATE_DEBUGGING_REFLECTION_SYSTEM_INSTRUCTIONS.endswith(
        "- Be extremely strict: if the root cause is elsewhere, the current node is innocent."
    )
    assert GENERATE_PATCH_SYSTEM_INSTRUCTIONS.startswith(
        "You are an expert debugger. You are given a function's source code and a reflection\n"
    )
    assert GENERATE_PATCH_SYSTEM_INSTRUCTIONS.endswith(
        "4. The fix should be minimal and directly address the issues identified in the\n   reflection."
    )


def test_inspection_prompt_names_the_target_in_the_heartbeat():
    messages = render_inspection_patch("shop.cart.total", SOURCE)
    assert len(messages) == 1 and messages[0]["role"] == "user"
    content = messages[0]["content"]
    assert inspection_heartbeat("shop.cart.total") in content
    assert "{target_node}" not in content
    assert content.endswith("\n\nTarget Function: shop.cart.total\nSource Code:\n" + SOURCE)
    assert content.startswith("You are a expert debugger.")


def test_reflection_prompt_holds_patch_and_result_in_the_seed_order():
    content = render_reflection("m.f", SOURCE, "def f(): ...", "exit code 1\nAssertionError: x")[0]["content"]
    head = GENERATE_DEBUGGING_REFLECTION_SYSTEM_INSTRUCTIONS + "\n\nTarget Function: m.f\n"
    assert content.startswith(head)
    assert content.endswith(
        "Source Code:\n" + SOURCE + "\n\nInspection Patch:\ndef f(): ...\n\n"
        "Execution Result:\nexit code 1\nAssertionError: x"
    )


def test_patch_prompt_holds_the_reflection():
    content = render_patch("m.f", SOURCE, "It drops the last item.\nCONFIRMED_BUGGY")[0]["content"]
    assert content.startswith(GENERATE_PATCH_SYSTEM_INSTRUCTIONS + "\n\nTarget Function: m.f\n")
    assert content.endswith("\n\nReflection:\nIt drops the last item.\nCONFIRMED_BUGGY")


def test_braces_in_values_are_left_alone():
    content = render_patch("m.{x}", "{source_code} {0}", "{reflection}")[0]["content"]
    assert "Target Function: m.{x}\nSource Code:\n{source_code} {0}\n\nReflection:\n{reflection}" in content


def test_prompt_hash_is_canonical():
    a = [{"role": "user", "content": "hi"}]
    b = [{"content": "hi", "role": "user"}]
    assert prompt_hash(a) == prompt_hash(b)
    assert len(prompt_hash(a)) == 64 and int(prompt_hash(a), 16) >= 0
    assert prompt_hash(a) != prompt_hash([{"role": "user", "content": "hi "}])
    assert prompt_hash(a) != prompt_hash([{"role": "system", "content": "hi"}])
    assert prompt_hash(a) != prompt_hash(a + a)


def test_rendering_is_deterministic():
    first = prompt_hash(render_inspection_patch("m.f", SOURCE))
    assert first == prompt_hash(render_inspection_patch("m.f", SOURCE))
    assert first != prompt_hash(render_inspection_patch("m.g", SOURCE))


@pytest.mark.parametrize("name", prompts.__all__)
def test_exported_names_exist(name):
    assert hasattr(prompts, name)


def test_the_prompt_module_uses_the_standard_library_only():
    tree = ast.parse(Path(prompts.__file__).read_text(encoding="utf-8"))
    nodes = list(ast.walk(tree))
    roots = {
        alias.name.split(".")[0] for node in nodes if isinstance(node, ast.Import) for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in nodes
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
    }
    assert roots <= set(sys.stdlib_module_names) | {"__future__"}


def test_disambiguating_tests_prompt_lists_functions_samples_and_limit():
    from equisa_core.discovery.prompts import render_disambiguating_tests

    [message] = render_disambiguating_tests(
        {"pkg.b": "def b():\n    return 2\n", "pkg.a": "def a():\n    return 1\n"},
        ["def test_x():\n    assert a() + b() == 3\n"], max_tests=4,
    )
    assert message["role"] == "user"
    content = message["content"]
    assert content.index("# pkg.a\ndef a():") < content.index("# pkg.b\ndef b():")
    assert "At most 4 tests" in content and "def test_x():" in content
    [empty] = render_disambiguating_tests({"pkg.a": "def a(): ..."}, [], max_tests=2)
    assert "(none available)" in empty["content"]
