"""The demo: a planner, reader, writer and reviewer doing real file work in a workspace."""
