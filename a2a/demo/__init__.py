"""The demo: seed 003's six roles doing real file work in a workspace."""
