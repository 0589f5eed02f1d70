"""The test-generation agent's deterministic parts (seed 001; seed 000 §8).

The loop itself is ``machine``: a pure state machine (steps out, observations in, a verdict) that
``flows/testgen.py`` drives. One concern per module besides: ``framework`` (unittest / pytest /
Django detection), ``static`` (syntax and lint results as values), ``reliability`` (pre- and
post-execution levels), ``critique`` (the runner's metrics and the critique, shared by the next
two), ``supervisor`` (the rule-based critique, in the seed's priority order), ``router``
(ENHANCE/FINISH and the stagnation rule), ``curation`` (§8: redundant tests, smells fixed within a
budget), ``smells`` (deterministic test-smell detectors and fixes), ``embedding`` (the local
embedding), ``boundary`` (boundary values and driver tests), ``assembly`` (deterministic modules
built from carved and observed tests), ``mutation_plan`` (which mutant runs against which tests,
and the score), ``report`` (the JSON report), ``coverage_plugin`` (the pytest plugin that measures
branch coverage inside the sandbox). Prompts live in ``equisa_core/testgen/prompts.py``.
"""
