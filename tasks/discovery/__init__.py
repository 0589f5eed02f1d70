"""Discovery's tasks: the suite it amplifies and its proposals."""
