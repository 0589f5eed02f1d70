"""The sandboxes that run untrusted code: the contract, the local and Docker backends, and test runs."""
