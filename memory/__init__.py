"""The memory stack: database, embedder, archetypes, episodic store, recall, provenance."""
