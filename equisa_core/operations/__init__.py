"""Running EQUISA as a service: batches over many repositories, CI events, where artifacts go."""
