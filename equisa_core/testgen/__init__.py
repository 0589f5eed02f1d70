"""The test-generation agent's deterministic parts (seed 001; seed 000 §8).

One concern per module: ``framework`` (unittest / pytest / Django detection), ``static`` (syntax and
lint results as values), ``reliability`` (pre- and post-execution levels), ``supervisor`` (the
rule-based critique, in the seed's priority order), ``router`` (ENHANCE/FINISH and the stagnation
rule), ``smells`` (deterministic test-smell detectors and fixes), ``embedding`` (the local
embedding), ``boundary`` (boundary values and driver tests), ``mutation_plan`` (which mutant runs
against which tests, and the score), ``report`` (the JSON report), ``coverage_plugin`` (the pytest
plugin that measures branch coverage inside the sandbox). Prompts live in
``equisa_core/testgen/prompts.py``.
"""
