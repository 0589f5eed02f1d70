"""What leaves a run: the applied patch, the pushed branch, the pull request and CI outputs."""
