"""The demo: a planner, reader, writer, reviewer, scribe and docs agent doing real file work in a workspace."""
