"""The dream cycle: scheduled replay, consolidation, decay and proposals (see issue 4)."""
