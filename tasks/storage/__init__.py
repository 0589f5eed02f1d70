"""Where runs are kept: the artifact store, the DuckDB history and the recording of a run."""
