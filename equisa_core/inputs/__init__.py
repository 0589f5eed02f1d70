"""The deterministic input rules that the repair's checks and the test generator share
(``neighbours``): one rule for the values next to a value, the probes of another kind and the edges
of the code's constants, so that every check moves a value alike."""
